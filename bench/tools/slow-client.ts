/**
 * The slow-client row (issue 33): watchers that stop reading for 30 s under ~100 writes/s, then
 * read again, side by side in one run: DIRECT (the fixture apiserver), through the proxy with
 * parked watchers (the default) and through the proxy without (`--max-parked-watchers=0`, a full
 * queue closes the watcher). Each watcher is a raw watch from the same RV on a paused socket; when
 * it reads again it behaves as client-go's reflector: a stream that ends is re-watched from the
 * last RV it got, a 410 ERROR event (or a 410 answer) is a relist (a LIST, then a watch from its
 * RV). Per target: relists (410s), re-watches, what the server did with the stalled watchers
 * (parked / closed: the proxy's metrics, the apiserver's `apiserver_terminated_watchers_total`),
 * the time until every watcher reached the last write, and the server's RSS at the end of the
 * stall. Starts a private fixture; the proxy runs src/cli.ts pinned to CPU 1, the fixture to 0.
 *   node bench/tools/slow-client.ts [--watchers 10] [--stall-s 30] [--rate 100] [--objects 200] [--kib 3] [--writes N]
 * `--writes N`: the stall lasts until N writes were made (at most twice `--stall-s`), so every
 * target sleeps through the same number of events on a machine where the writer cannot keep the
 * rate (the proxy shares its CPU). Prints one JSON line per target, then a Markdown table with
 * ratios to direct. `--out FILE` appends this run's rows to FILE (`{"runs": [...]}`).
 * "catch-up events": the proxy's `kube_cache_proxy_watch_cache_watcher_catchup_events` (sum over
 * the parked watchers' resumes: history events replayed instead of a relist).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { Agent, request } from 'undici';
import { startFixture } from '../../test/fixture/index.ts';
import {
  openPausedWatch,
  type RawWatchEvent,
  RawWatchStatusError,
  rawWatchEvents,
} from '../../test/support/raw-watch.ts';
import { toolArgs } from '../support/args.ts';
import { pin, round, rssBytes } from '../support/proc.ts';
import { startProxy } from '../support/proxy-process.ts';

const args = toolArgs({
  numbers: { watchers: 10, 'stall-s': 30, rate: 100, objects: 200, kib: 3, writes: 0 },
  strings: { out: undefined },
});
const WATCHERS = args.watchers;
const STALL_MS = args['stall-s'] * 1000;
const RATE = args.rate;
const OBJECTS = args.objects;
const KIB = args.kib;
const WRITES = args.writes;
const OUT = args.out;
const NS = 'kcp-slow-client';
const log = (m: string) => process.stderr.write(`${m}\n`);

pin(process.pid, '1');
const f = await startFixture({ verbose: false });
const apiPids = Object.values(f.pids());
for (const p of apiPids) pin(p, '0');
const agent = new Agent({ connect: { ca: f.caPem }, connections: 64 });
const auth = { authorization: `Bearer ${f.tokens.admin}` };

async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: { metadata: { resourceVersion: string } } }> {
  const r = await request(`${base}${path}`, {
    method: method as 'GET',
    dispatcher: base.startsWith('https') ? agent : undefined,
    headers: {
      ...auth,
      'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.body.text();
  return { status: r.statusCode, json: text ? JSON.parse(text) : undefined };
}

// The objects: OBJECTS ConfigMaps of KIB KiB.
await call(f.server, 'POST', '/api/v1/namespaces', { metadata: { name: NS } });
const cms = `/api/v1/namespaces/${NS}/configmaps`;
const blob = 'x'.repeat(KIB * 1024);
for (let i = 0; i < OBJECTS; i += 16)
  await Promise.all(
    Array.from({ length: Math.min(16, OBJECTS - i) }, (_, k) =>
      call(f.server, 'POST', cms, { metadata: { name: `cm-${i + k}` }, data: { blob, n: '0' } }),
    ),
  );

/**
 * PATCHes the ConfigMaps round-robin at `rate`/s for `ms` (open loop, a tick every 10 ms), or
 * with `WRITES` until that many were sent (at most 2 × `ms`).
 */
async function writeFor(ms: number, rate: number): Promise<{ sent: number; lastRV: bigint }> {
  let sent = 0;
  let lastRV = 0n;
  const t0 = performance.now();
  const inflight = new Set<Promise<unknown>>();
  const more = () =>
    WRITES > 0 ? sent < WRITES && performance.now() - t0 < 2 * ms : performance.now() - t0 < ms;
  while (more()) {
    const due = Math.floor(((performance.now() - t0) / 1000) * rate);
    while (sent < due && inflight.size < 64 && (WRITES === 0 || sent < WRITES)) {
      const i = sent++;
      const p = call(f.server, 'PATCH', `${cms}/cm-${i % OBJECTS}`, { data: { n: String(i) } })
        .then((r) => {
          const rv = r.status === 200 ? BigInt(r.json.metadata.resourceVersion) : 0n;
          if (rv > lastRV) lastRV = rv;
        })
        .finally(() => inflight.delete(p));
      inflight.add(p);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.all(inflight);
  return { sent, lastRV };
}

/** A watch on a paused socket (TLS for the apiserver); nothing is read until it is read. */
function pausedWatch(base: string, path: string): Socket {
  return openPausedWatch(base, path, auth, f.caPem);
}

/** Reads a chunked watch response; calls `onEvent` per event; resolves 'end' or 'stop' (onEvent true), or a status other than 200. */
async function readWatch(
  sock: Socket,
  onEvent: (e: RawWatchEvent) => boolean,
): Promise<'end' | 'stop' | number> {
  try {
    for await (const e of rawWatchEvents(sock)) if (onEvent(e)) return 'stop';
  } catch (err) {
    if (err instanceof RawWatchStatusError) return err.status;
    // else reset by the server
  }
  return 'end';
}

interface Client {
  relists: number;
  rewatches: number;
  events: number;
  duplicates: number;
}

/** A reflector-like client: reads `sock`, then re-watches / relists until it has RV ≥ `last`. */
async function follow(base: string, first: Socket, from: bigint, last: bigint): Promise<Client> {
  const c: Client = { relists: 0, rewatches: 0, events: 0, duplicates: 0 };
  let rv = from;
  let sock = first;
  for (;;) {
    let expired = false;
    const out = await readWatch(sock, (e) => {
      if (e.type === 'ERROR') {
        if (e.object?.code === 410) expired = true;
        return true;
      }
      const erv = BigInt(e.object.metadata.resourceVersion!);
      if (e.type !== 'BOOKMARK') {
        if (erv <= rv) c.duplicates++;
        c.events++;
      }
      if (erv > rv) rv = erv;
      return rv >= last;
    });
    sock.destroy();
    if (rv >= last) return c;
    if (expired || out === 410) {
      c.relists++;
      const l = await call(base, 'GET', `${cms}?limit=500`);
      rv = BigInt(l.json.metadata.resourceVersion);
      if (rv >= last) return c;
    } else c.rewatches++;
    sock = pausedWatch(base, `${cms}?watch=1&resourceVersion=${rv}&timeoutSeconds=600`);
    sock.resume();
  }
}

async function metric(url: string, re: RegExp): Promise<number> {
  const r = await request(url, { dispatcher: url.startsWith('https') ? agent : undefined, headers: auth });
  const text = await r.body.text();
  let sum = 0;
  for (const line of text.split('\n')) if (re.test(line)) sum += Number(line.split(' ').pop());
  return sum;
}

interface Row {
  target: string;
  watchers: number;
  writes: number;
  relists: number;
  rewatches: number;
  duplicates: number;
  parked: number;
  closed: number;
  resumed: number;
  catchupEvents: number;
  stallMs: number;
  catchUpMs: number;
  rssMiB: number;
}

async function run(target: 'direct' | 'proxy-parked' | 'proxy-closed'): Promise<Row> {
  const proxy =
    target === 'direct'
      ? undefined
      : await startProxy({
          kubeconfig: f.kubeconfigs.adminToken,
          resources: ['configmaps'],
          cpu: '1',
          extraArgs: target === 'proxy-closed' ? ['--max-parked-watchers=0'] : [],
        });
  try {
    const base = proxy?.url ?? f.server;
    const from = BigInt((await call(f.server, 'GET', `${cms}?limit=1`)).json.metadata.resourceVersion);
    const terminated0 = proxy
      ? 0
      : await metric(`${f.server}/metrics`, /^apiserver_terminated_watchers_total\{.*resource="configmaps"/);
    const socks = Array.from({ length: WATCHERS }, () =>
      pausedWatch(base, `${cms}?watch=1&resourceVersion=${from}&timeoutSeconds=600`),
    );
    await new Promise((r) => setTimeout(r, 1000));
    const s0 = performance.now();
    // The last write's RV (a LIST's RV would also count other resources' writes: never reached).
    const { sent: writes, lastRV: last } = await writeFor(STALL_MS, RATE);
    const stallMs = Math.round(performance.now() - s0);
    const pids = proxy ? [proxy.pid] : apiPids;
    const rss = pids.reduce((s, p) => s + rssBytes(p), 0);
    let parked = 0;
    let closed = 0;
    if (proxy) {
      parked = await metric(
        `${proxy.opsUrl}/metrics`,
        /^kube_cache_proxy_watch_cache_watcher_stalls_total\{/,
      );
      closed = await metric(`${proxy.opsUrl}/metrics`, /^kube_cache_proxy_terminated_watchers_total\{/);
    } else {
      closed =
        (await metric(
          `${f.server}/metrics`,
          /^apiserver_terminated_watchers_total\{.*resource="configmaps"/,
        )) - terminated0;
    }
    const t0 = performance.now();
    const clients = await Promise.all(
      socks.map((s) => {
        s.resume();
        return follow(base, s, from, last);
      }),
    );
    const resumed = proxy
      ? await metric(
          `${proxy.opsUrl}/metrics`,
          /^kube_cache_proxy_watch_cache_watcher_catchup_rounds_total\{/,
        )
      : 0;
    const catchupEvents = proxy
      ? await metric(`${proxy.opsUrl}/metrics`, /^kube_cache_proxy_watch_cache_watcher_catchup_events_sum\{/)
      : 0;
    const row: Row = {
      target,
      watchers: WATCHERS,
      writes,
      relists: clients.reduce((s, c) => s + c.relists, 0),
      rewatches: clients.reduce((s, c) => s + c.rewatches, 0),
      duplicates: clients.reduce((s, c) => s + c.duplicates, 0),
      parked,
      closed,
      resumed,
      catchupEvents,
      stallMs,
      catchUpMs: Math.round(performance.now() - t0),
      rssMiB: round(rss / 2 ** 20),
    };
    console.log(JSON.stringify(row));
    return row;
  } finally {
    await proxy?.stop();
  }
}

try {
  const rows: Row[] = [];
  for (const t of ['direct', 'proxy-parked', 'proxy-closed'] as const) {
    log(`slow-client: ${t}`);
    rows.push(await run(t));
  }
  const d = rows[0]!;
  const ratio = (a: number, b: number) => (b === 0 ? (a === 0 ? '1' : '∞') : String(round(a / b, 2)));
  console.log(
    `\n| target | writes | stall s | relists (410) | re-watches | duplicates | parked | closed | resumed (catch-up events) | catch-up ms (× direct) | server RSS MiB (× direct) |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |`,
  );
  for (const r of rows)
    console.log(
      `| ${r.target} | ${r.writes} | ${round(r.stallMs / 1000)} | ${r.relists} | ${r.rewatches} | ${r.duplicates} | ${r.parked} | ${r.closed} | ${r.resumed} (${r.catchupEvents}) | ${r.catchUpMs} (${ratio(r.catchUpMs, d.catchUpMs)}) | ${r.rssMiB} (${ratio(r.rssMiB, d.rssMiB)}) |`,
    );
  if (OUT) {
    const prev = existsSync(OUT)
      ? (JSON.parse(readFileSync(OUT, 'utf8')) as { runs: unknown[] })
      : { runs: [] };
    prev.runs.push({
      date: new Date().toISOString(),
      options: {
        watchers: WATCHERS,
        stallS: STALL_MS / 1000,
        rate: RATE,
        objects: OBJECTS,
        kib: KIB,
        writes: WRITES,
      },
      rows,
    });
    writeFileSync(OUT, `${JSON.stringify(prev, null, 2)}\n`);
  }
} finally {
  await agent.close();
  await f.stop();
}
