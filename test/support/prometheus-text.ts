/**
 * A Prometheus text-format (0.0.4) parser strict enough to fail on a malformed exposition, and
 * lookups over its samples, for the tests that scrape the ops listener's `/metrics`.
 */
import assert from 'node:assert/strict';

/** One sample of a Prometheus text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses the Prometheus text format (0.0.4): `# HELP`/`# TYPE` comments, then
 * `name{label="value",...} number` lines. Throws (assertion) on any line it cannot read, on a
 * sample whose family has no TYPE, and on duplicate series.
 */
export function parsePrometheus(text: string): Sample[] {
  const types = new Map<string, string>();
  const seen = new Set<string>();
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const t = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (t) {
      types.set(t[1]!, t[2]!);
      continue;
    }
    if (line.startsWith('# HELP ')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|[Nn]a[Nn]|[+-]Inf)$/.exec(line);
    assert.ok(m, `unparsable exposition line: ${line}`);
    const name = m[1]!;
    // A histogram's samples are `_bucket`, `_sum`, `_count` of its family; a summary's `_sum`,
    // `_count` (and its quantiles under the family's own name).
    const suffixed = /^(.*)_(bucket|sum|count)$/.exec(name);
    const base = suffixed ? types.get(suffixed[1]!) : undefined;
    const family =
      types.has(name) || base === 'histogram' || (base === 'summary' && suffixed![2] !== 'bucket')
        ? name
        : undefined;
    assert.ok(family, `sample without a TYPE: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
    let pos = 0;
    while (pos < body.length) {
      re.lastIndex = pos;
      const l = re.exec(body);
      assert.ok(l, `unparsable labels: ${line}`);
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
      pos = re.lastIndex;
    }
    const key = `${name}${body}`;
    assert.ok(!seen.has(key), `duplicate series: ${line}`);
    seen.add(key);
    out.push({ name, labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of the samples named `name` whose labels include `labels`. */
export function sum(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

/** Whether a series `name` with `labels` exists at all. */
export function has(samples: Sample[], name: string, labels: Record<string, string> = {}): boolean {
  return samples.some((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** {@link sum} over a `/metrics` text ({@link parsePrometheus}: throws on a malformed exposition). */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  return sum(parsePrometheus(text), name, labels);
}
