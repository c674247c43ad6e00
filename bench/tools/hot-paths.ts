/**
 * The wall-clock side of three unit tests that count operations instead of timing them (a speed
 * target lives here, never in a timed unit test), in process, no apiserver:
 *   node bench/tools/hot-paths.ts [--reps 9]
 * - `accept`: `acceptsPlainJson` on a hostile `Accept` header of 400 and 4,000 clauses whose q
 *   ascend (an insertion sort's worst order), each decided until 40,000 clauses were parsed per
 *   run, µs per clause; the ratio of the two per-clause
 *   costs is ~1 for an O(n log n) sort and ~10 for a quadratic one
 *   (test/unit/apimachinery/accept.test.ts counts the comparisons);
 * - `pages`: a LIST walked in 1,000 `continue` pages of 20 over 20,000 pods at a moved RV
 *   (test/unit/cache/cacher.test.ts counts the selector evaluations);
 * - `selector`: 20,000 objects matched against `in`/`notin` of 100,000 values each
 *   (test/unit/apimachinery/label-selector.test.ts counts value reads).
 * Prints one JSON line per measurement (ms or µs: min, median, max over `--reps`), then a
 * Markdown table.
 */
import { acceptsPlainJson } from '../../src/apimachinery/accept.ts';
import { decodeContinue } from '../../src/apimachinery/continue-token.ts';
import { parseLabelSelector } from '../../src/apimachinery/label-selector.ts';
import { ALL, newCache, pod } from '../../test/support/watch-cache-fixtures.ts';
import { toolArgs } from '../support/args.ts';

const { reps } = toolArgs({ numbers: { reps: 9 } });

interface Row {
  what: string;
  unit: string;
  min: number;
  median: number;
  max: number;
}

/** `fn` timed `reps` times (after one warm-up run), in ms, divided by `per`. */
function timed(what: string, unit: string, per: number, fn: () => void): Row {
  fn();
  const xs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    fn();
    xs.push((performance.now() - t0) / per);
  }
  xs.sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return { what, unit, min: r(xs[0]!), median: r(xs[xs.length >> 1]!), max: r(xs.at(-1)!) };
}

function hostileAccept(n: number): string {
  const clauses = Array.from({ length: n }, (_, i) => `text/x;q=0.${String(i).padStart(5, '0')}`);
  return `${clauses.join(',')},application/json`;
}

/** The header of `n` clauses decided 40,000 / n times per run (40,000 clauses per run at any n). */
function acceptRow(n: number): Row {
  const h = hostileAccept(n);
  const times = Math.max(1, Math.round(40_000 / n));
  return timed(`accept: ${n} clauses`, 'µs per clause', (n * times) / 1000, () => {
    for (let i = 0; i < times; i++) if (!acceptsPlainJson(h)) throw new Error('not decided');
  });
}

function pagesRow(): Row {
  const { cache } = newCache();
  const n = 20_000;
  cache.replace(
    Array.from({ length: n }, (_, i) => pod(`ns${i % 7}`, `p${(i * 7919) % n}`, 5)),
    '10',
  );
  cache.update(pod('ns0', 'p0', 11, { labels: { moved: 'yes' } }));
  return timed('pages: 1,000 pages of 20 of 20,000 pods at a moved RV', 'ms', 1, () => {
    let q: Parameters<typeof cache.list>[0] = { ...ALL, exactRV: 10n, limit: 20 };
    for (;;) {
      const r = cache.list(q);
      if (!r.continue) break;
      q = { ...ALL, limit: 20, continueFrom: decodeContinue(r.continue)! };
    }
  });
}

function selectorRow(): Row {
  const values = Array.from({ length: 100_000 }, (_, i) => `value-${i}`);
  const sel = parseLabelSelector(`app in (${values.join(',')}),tier notin (${values.join(',')})`);
  return timed('selector: 20,000 matches, in/notin of 100,000 values', 'ms', 1, () => {
    for (let i = 0; i < 20_000; i++) sel.matches({ app: i % 2 ? 'absent' : `value-${i}`, tier: 'absent' });
  });
}

const small = acceptRow(400);
const large = acceptRow(4000);
const rows = [small, large, pagesRow(), selectorRow()];
for (const r of rows) process.stdout.write(`${JSON.stringify(r)}\n`);
const ratio = Math.round((large.median / small.median) * 100) / 100;
process.stdout.write(`${JSON.stringify({ what: 'accept: per-clause cost, 4000 / 400 clauses', ratio })}\n\n`);
process.stdout.write('| measurement | unit | min | median | max |\n| --- | --- | --- | --- | --- |\n');
for (const r of rows) process.stdout.write(`| ${r.what} | ${r.unit} | ${r.min} | ${r.median} | ${r.max} |\n`);
process.stdout.write(`| accept: per-clause cost 4000 / 400 (median) | ratio | | ${ratio} | |\n`);
