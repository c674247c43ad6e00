/**
 * Helpers of the ops e2e tests: the real CLI (`src/cli.ts`) as a child process with its stdout
 * (pino JSON lines) captured, and a Prometheus text-format parser strict enough to fail on a
 * malformed exposition.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';

const root = join(fileURLToPath(import.meta.url), '..', '..', '..');

/** A running `kube-cache-proxy` child. */
export interface ProxyProcess {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT` of the API listener. */
  address: string;
  /** `http://127.0.0.1:PORT` of the ops listener. */
  ops: string;
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Parsed JSON log lines so far. */
  logs(): Array<Record<string, unknown>>;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
}

/** Starts the CLI with `args` (plus `--listen`/`--ops-listen` on free ports) and waits until it listens. */
export async function spawnProxy(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ProxyProcess> {
  const child = spawn(
    process.execPath,
    [join(root, 'src', 'cli.ts'), '--listen', '127.0.0.1:0', '--ops-listen', '127.0.0.1:0', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, ...env } },
  );
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  const started = await new Promise<{ address: string; ops: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`proxy did not listen in 30 s: ${out}${err}`)), 30_000);
    const check = () => {
      const m = /"address":"(http:\/\/[^"]+)","ops":"(http:\/\/[^"]+)"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ address: m[1]!, ops: m[2]! });
      }
    };
    child.stdout!.on('data', check);
    void exited.then((c) => {
      clearTimeout(timer);
      reject(new Error(`proxy exited ${c}: ${err}`));
    });
  });
  let stopping: Promise<number | null> | undefined;
  return {
    child,
    ...started,
    stdout: () => out,
    logs: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    stop() {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        return exited;
      })();
      return stopping;
    },
  };
}

/** GET `url`; returns status and body text. */
export async function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const r = await request(url, { headers });
  return { status: r.statusCode, body: await r.body.text(), headers: r.headers };
}

/** Polls `fn` every 200 ms until it returns a value other than undefined (or throws after `ms`). */
export async function eventually<T>(what: string, ms: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms${last ? `: ${last}` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

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
    const family = [...types.keys()].find(
      (f) =>
        name === f || (types.get(f) === 'histogram' && /^(.*)_(bucket|sum|count)$/.exec(name)?.[1] === f),
    );
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
