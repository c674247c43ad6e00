/**
 * Watch fan-out load in its own (pinned) process:  node bench/workers/watch-worker.ts '<WatchSpec JSON>'.
 * Opens `watchers` watches on `url` (plus `stalled` that are never read), prints `ready` once
 * every watch answered 200, counts events for `measureMs`, then prints one JSON line
 * ({@link WatchResult}). Delivery latency = receive time − the `bench.kcp/sent` annotation the
 * writer stamped (performance.timeOrigin + performance.now(), ms, same machine clock); only
 * events sent after `ready` count. Lines are scanned, not JSON-parsed, to keep the client cheap.
 */
import { Agent, request } from 'undici';

/** Input of the worker. */
export interface WatchSpec {
  url: string;
  headers: Record<string, string>;
  watchers: number;
  stalled: number;
  measureMs: number;
  /** Rates are per second of this window (the writer's duration), not of `measureMs`. */
  rateWindowMs: number;
}

/** Output of the worker. Latencies ms; rates per second over `measureMs`. */
export interface WatchResult {
  watchers: number;
  events: number;
  eventsPerSec: number;
  bytesPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Watches that ended (server closed them) during the run, healthy ones. */
  healthyClosed: number;
  /** Stalled watches found closed by the server when finally read (bytes they had got). */
  stalledClosed: number;
  stalledBytes: number;
}

const MARK = Buffer.from('"bench.kcp/sent":"');
const QUOTE = 34;
const now = () => performance.timeOrigin + performance.now();

/** Nearest-rank percentile of an ascending-sorted array. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as WatchSpec;
  const dispatcher = new Agent({
    connect: { rejectUnauthorized: false },
    bodyTimeout: 0,
    headersTimeout: 60_000,
  });
  const lat: number[] = [];
  let readyAt = Number.POSITIVE_INFINITY;
  let counting = true;
  let bytes = 0;
  let healthyClosed = 0;
  const open = async () => {
    const res = await request(spec.url, { dispatcher, headers: spec.headers });
    if (res.statusCode !== 200)
      throw new Error(`watch: ${res.statusCode} ${(await res.body.text()).slice(0, 300)}`);
    return res;
  };
  const healthy = await Promise.all(Array.from({ length: spec.watchers }, open));
  const stalled = await Promise.all(Array.from({ length: spec.stalled }, open));
  for (const res of healthy) {
    // Bytes, not strings: Buffer.indexOf is native, and no UTF-8 decoding of every event.
    let rest: Buffer | undefined;
    res.body.on('data', (chunk: Buffer) => {
      if (!counting) return;
      bytes += chunk.length;
      const t = now();
      const b = rest ? Buffer.concat([rest, chunk]) : chunk;
      let start = 0;
      for (let nl = b.indexOf(10, start); nl >= 0; nl = b.indexOf(10, start)) {
        const i = b.indexOf(MARK, start);
        if (i >= 0 && i < nl) {
          const from = i + MARK.length;
          const sent = Number(b.toString('latin1', from, b.indexOf(QUOTE, from)));
          if (sent >= readyAt) lat.push(t - sent);
        }
        start = nl + 1;
      }
      rest = start < b.length ? b.subarray(start) : undefined;
    });
    res.body.on('end', () => healthyClosed++);
    res.body.on('error', () => healthyClosed++);
  }
  readyAt = now();
  process.stdout.write('ready\n');
  await new Promise((r) => setTimeout(r, spec.measureMs));
  counting = false;
  const elapsedS = spec.rateWindowMs / 1000;
  let stalledClosed = 0;
  let stalledBytes = 0;
  await Promise.all(
    stalled.map(
      (res) =>
        new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 3000);
          const done = () => {
            stalledClosed++;
            clearTimeout(t);
            resolve();
          };
          res.body.on('data', (c: Buffer) => {
            stalledBytes += c.length;
          });
          res.body.on('end', done);
          res.body.on('error', done);
        }),
    ),
  );
  const sorted = Float64Array.from(lat).sort();
  const r2 = (x: number) => Math.round(x * 100) / 100;
  const out: WatchResult = {
    watchers: spec.watchers,
    events: lat.length,
    eventsPerSec: Math.round(lat.length / elapsedS),
    bytesPerSec: Math.round(bytes / elapsedS),
    p50Ms: r2(percentile(sorted, 50)),
    p99Ms: r2(percentile(sorted, 99)),
    maxMs: r2(sorted.length ? sorted[sorted.length - 1]! : 0),
    healthyClosed,
    stalledClosed,
    stalledBytes,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
}

if (import.meta.main) await main();
