/**
 * HTTP load through autocannon (npm) in a separate process pinned with `taskset` to the core the
 * server under test is NOT on (see bench/run.ts for the layout). Latencies are autocannon's
 * (HdrHistogram, ms, whole response); bytes are on the wire (compressed when the server gzips).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** What one load run does. */
export interface LoadSpec {
  url: string;
  connections: number;
  durationS: number;
  method?: 'GET' | 'PATCH';
  headers: Record<string, string>;
  /** PATCH only: the annotation key whose value changes on every request. */
  patchAnnotation?: string;
  /** Bearer tokens sent round robin, one per request (distinct client identities). */
  tokens?: string[];
}

/** autocannon's summary of one run. Latencies ms; bytes/s average over the run. */
export interface LoadResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  bytesPerSec: number;
  non2xx: number;
  errors: number;
  durationS: number;
}

const worker = fileURLToPath(new URL('../workers/load-worker.ts', import.meta.url));

/**
 * Runs `spec` in a child pinned to `cpu`; throws if the worker fails. A run in which no request
 * completed (autocannon counts only completed ones: one answer slower than the whole run, e.g. a
 * 5 MB gzipped LIST from an apiserver sharing a loaded core) is run again for twice as long, up
 * to 64 s, so a row reports a rate instead of 0; `durationS` of the result says how long it ran.
 */
export async function runLoad(spec: LoadSpec, cpu: string): Promise<LoadResult> {
  let run = spec;
  for (;;) {
    const r = await runLoadOnce(run, cpu);
    if (r.requests > 0 || r.non2xx + r.errors > 0 || run.durationS >= 64) return r;
    run = { ...run, durationS: run.durationS * 2 };
  }
}

function runLoadOnce(spec: LoadSpec, cpu: string): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'taskset',
      ['-c', cpu, process.execPath, worker, JSON.stringify(spec)],
      { maxBuffer: 1 << 20, timeout: (spec.durationS + 120) * 1000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`load ${spec.url}: ${err.message}\n${stderr.slice(-1000)}`));
        resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as LoadResult);
      },
    );
  });
}

/**
 * The headers client-go sends on a LIST/GET (Go's transport adds `Accept-Encoding: gzip`);
 * without `token`, no Authorization header (a client with no credential).
 */
export function clientHeaders(token: string | undefined, gzip: boolean): Record<string, string> {
  return {
    accept: 'application/json, */*',
    'user-agent': 'kube-cache-proxy-bench/0.1 (linux/amd64) kubernetes/bench',
    ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
    ...(gzip ? { 'accept-encoding': 'gzip' } : {}),
  };
}
