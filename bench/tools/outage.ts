/**
 * The outage row (issue 33): what clients of the proxy see while the apiserver is frozen and
 * when it is killed and restarted, side by side with the same clients on the apiserver directly.
 * One private fixture; the proxy (src/cli.ts caching configmaps) pinned to CPU 1, the fixture to
 * CPU 0. `--followers` reflector-like clients through the proxy and as many directly, each
 * holding a store of the namespace's ConfigMaps: an initial LIST (RV="0"), then a watch from its
 * RV with bookmarks; a stream that ends is re-watched from the last RV, a 410 (ERROR event or
 * answer) is a relist with RV="" as client-go's reflector does after one. A writer PATCHes the
 * ConfigMaps round-robin at `--rate`/s on the apiserver, paused while it is down.
 *
 * 1. **Frozen**: the kube-apiserver process gets SIGSTOP for `--freeze-s` (etcd keeps running),
 *    then SIGCONT. During it a cached read (LIST RV="0") every 250 ms through the proxy.
 * 2. **Killed and restarted**: SIGKILL, `--down-s` of cached reads, then a new kube-apiserver
 *    on the same port and etcd (its new watch cache starts at etcd's current revision).
 *
 * After each phase, once the writer wrote for 5 s more and every client holds the last write:
 * the clients' relists (and whether the proxy served their LISTs: no `Audit-Id` header),
 * re-watches, the apiserver's own count of LIST and WATCH requests for configmaps
 * (`apiserver_request_total`; it restarts from 0 with the process), the proxy's reflector relists
 * by reason, and whether every client's store and the proxy's RV="0" LIST equal a direct LIST.
 * `--namespace-cache`: the proxy caches the clients' namespace only (`--namespace`), a resource
 * the restart does not change (cluster-wide, the apiserver's own start updates ConfigMaps in
 * kube-system, so that cache really changed).
 * `--quiet-restart`: after the restart the writer waits until the proxy has relisted (its reflector
 * live again), as when the resource is quiet; by default it writes at once, so the proxy's relist
 * (after its reconnect backoff) usually finds changed objects.
 *   node bench/tools/outage.ts [--followers 10] [--objects 200] [--rate 50] [--freeze-s 60] [--down-s 10] [--namespace-cache] [--quiet-restart] [--out FILE]
 * Prints one JSON line per phase; `--out FILE` appends this run to FILE (`{"runs": [...]}`).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { startFixture } from '../../test/fixture/index.ts';
import { pin } from '../support/proc.ts';
import { startProxy } from '../support/proxy-process.ts';

const argv = process.argv.slice(2);
const opt = (name: string, d: number) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : d;
};
const outIdx = argv.indexOf('--out');
const OUT = outIdx >= 0 ? argv[outIdx + 1] : undefined;
const FOLLOWERS = opt('followers', 10);
const OBJECTS = opt('objects', 200);
const RATE = opt('rate', 50);
const FREEZE_MS = opt('freeze-s', 60) * 1000;
const DOWN_MS = opt('down-s', 10) * 1000;
const NAMESPACE_CACHE = argv.includes('--namespace-cache');
const QUIET_RESTART = argv.includes('--quiet-restart');
const NS = 'kcp-outage';
const cms = `/api/v1/namespaces/${NS}/configmaps`;
const log = (m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

pin(process.pid, '1');
const f = await startFixture({ verbose: false });
const pinFixture = () => {
  for (const p of Object.values(f.pids())) pin(p, '0');
};
pinFixture();
const agent = new Agent({ connect: { ca: f.caPem }, connections: 128, bodyTimeout: 0, headersTimeout: 0 });
const auth = { authorization: `Bearer ${f.tokens.admin}` };

interface Answer {
  status: number;
  fromProxy: boolean;
  json: { metadata: { resourceVersion: string }; items?: Item[] } | undefined;
}
interface Item {
  metadata: { name: string; resourceVersion: string };
}

async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  timeoutMs = 30_000,
): Promise<Answer> {
  const r = await request(`${base}${path}`, {
    method: method as 'GET',
    dispatcher: agent,
    headers: {
      ...auth,
      'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
    },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.body.text();
  return {
    status: r.statusCode,
    fromProxy: r.headers['audit-id'] === undefined,
    json: text && r.statusCode < 300 ? JSON.parse(text) : undefined,
  };
}

/** A reflector-like client holding the namespace's ConfigMaps (name → RV). */
class Follower {
  readonly store = new Map<string, string>();
  rv = 0n;
  relists = 0;
  /** Relists the proxy answered itself (no `Audit-Id`): only meaningful through the proxy. */
  relistsFromProxy = 0;
  rewatches = 0;
  watchFailures = 0;
  readonly #stop = new AbortController();
  #done: Promise<void> | undefined;
  readonly base: string;
  constructor(base: string) {
    this.base = base;
  }

  start(): Promise<void> {
    const ready = this.#list('0');
    this.#done = ready.then(() => this.#loop());
    return ready;
  }

  async #list(rv: string): Promise<void> {
    for (;;) {
      try {
        const r = await call(this.base, 'GET', `${cms}${rv === '' ? '' : `?resourceVersion=${rv}`}`);
        if (r.status === 200 && r.json) {
          this.store.clear();
          for (const i of r.json.items ?? []) this.store.set(i.metadata.name, i.metadata.resourceVersion);
          this.rv = BigInt(r.json.metadata.resourceVersion);
          if (r.fromProxy && this.base !== f.server) this.relistsFromProxy++;
          return;
        }
      } catch {
        // refused / reset: retry
      }
      if (this.#stop.signal.aborted) return;
      await sleep(1000);
    }
  }

  async #loop(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      let expired = false;
      try {
        const r = await request(
          `${this.base}${cms}?watch=1&allowWatchBookmarks=true&resourceVersion=${this.rv}&timeoutSeconds=600`,
          { dispatcher: agent, headers: auth, signal: this.#stop.signal },
        );
        if (r.statusCode === 410) expired = true;
        else if (r.statusCode !== 200) {
          await r.body.text();
          this.watchFailures++;
          await sleep(1000);
          continue;
        }
        let buf = '';
        if (!expired)
          for await (const c of r.body) {
            buf += (c as Buffer).toString();
            let nl = buf.indexOf('\n');
            while (nl >= 0) {
              const e = JSON.parse(buf.slice(0, nl)) as { type: string; object: Item & { code?: number } };
              buf = buf.slice(nl + 1);
              nl = buf.indexOf('\n');
              if (e.type === 'ERROR') {
                if (e.object.code === 410) expired = true;
                break;
              }
              const rv = BigInt(e.object.metadata.resourceVersion);
              if (e.type === 'DELETED') this.store.delete(e.object.metadata.name);
              else if (e.type !== 'BOOKMARK')
                this.store.set(e.object.metadata.name, e.object.metadata.resourceVersion);
              if (rv > this.rv) this.rv = rv;
            }
            if (expired) break;
          }
        else await r.body.text();
        if (expired) r.body.destroy();
      } catch {
        if (this.#stop.signal.aborted) return;
        this.watchFailures++;
        await sleep(1000);
        continue;
      }
      if (expired) {
        this.relists++;
        await this.#list('');
      } else this.rewatches++;
    }
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done?.catch(() => undefined);
  }
}

/** PATCHes the ConfigMaps round-robin at RATE/s while not paused; remembers the last written RV. */
const writer = { paused: true, stopped: false, sent: 0, failed: 0, lastRV: 0n };
const writing = (async () => {
  let due = 0;
  let tick = performance.now();
  const inflight = new Set<Promise<unknown>>();
  while (!writer.stopped) {
    const now = performance.now();
    if (writer.paused) due = writer.sent;
    else due += ((now - tick) * RATE) / 1000; // open loop: RATE per second of writing
    tick = now;
    while (writer.sent < Math.floor(due) && inflight.size < 32) {
      const i = writer.sent++;
      const p = call(f.server, 'PATCH', `${cms}/cm-${i % OBJECTS}`, { data: { n: String(i) } }, 10_000)
        .then((r) => {
          if (r.status !== 200 || !r.json) return void writer.failed++;
          const rv = BigInt(r.json.metadata.resourceVersion);
          if (rv > writer.lastRV) writer.lastRV = rv;
        })
        .catch(() => void writer.failed++)
        .finally(() => inflight.delete(p));
      inflight.add(p);
    }
    await sleep(20);
  }
  await Promise.all(inflight);
})();

async function writeFor(ms: number): Promise<void> {
  writer.paused = false;
  await sleep(ms);
  writer.paused = true;
  await sleep(500); // in-flight writes land
}

/** Samples a cached read (LIST RV="0" through the proxy) every 250 ms until `until` resolves. */
async function cachedReads(
  base: string,
  until: Promise<unknown>,
): Promise<{ ok: number; total: number; maxMs: number }> {
  const out = { ok: 0, total: 0, maxMs: 0 };
  let done = false;
  void until.then(() => {
    done = true;
  });
  while (!done) {
    const t = performance.now();
    out.total++;
    try {
      const r = await call(base, 'GET', `${cms}?resourceVersion=0`, undefined, 5000);
      if (r.status === 200 && r.fromProxy && (r.json?.items?.length ?? 0) === OBJECTS) out.ok++;
    } catch {
      // timeout or refused: not answered
    }
    out.maxMs = Math.max(out.maxMs, Math.round(performance.now() - t));
    await sleep(250);
  }
  return out;
}

async function apiserverCounts(): Promise<{ lists: number; watches: number }> {
  const r = await request(`${f.server}/metrics`, { dispatcher: agent, headers: auth });
  const text = await r.body.text();
  const sum = (verb: string) => {
    let n = 0;
    for (const line of text.split('\n'))
      if (
        line.startsWith('apiserver_request_total{') &&
        line.includes('resource="configmaps"') &&
        line.includes(`verb="${verb}"`)
      )
        n += Number(line.slice(line.lastIndexOf(' ') + 1));
    return n;
  };
  return { lists: sum('LIST'), watches: sum('WATCH') };
}

async function proxyRelists(ops: string): Promise<Record<string, number>> {
  const text = await (await request(`${ops}/metrics`)).body.text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^kube_cache_proxy_reflector_relists_total\{.*reason="([^"]+)".*\} (\d+)/.exec(line);
    if (m) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
  }
  return out;
}

async function caughtUp(fs: Follower[], timeoutMs = 120_000): Promise<number> {
  const t0 = performance.now();
  while (fs.some((x) => x.rv < writer.lastRV)) {
    if (performance.now() - t0 > timeoutMs) throw new Error('clients did not catch up within 120 s');
    await sleep(50);
  }
  return Math.round(performance.now() - t0);
}

const snap = (fs: Follower[]) => ({
  relists: fs.reduce((s, x) => s + x.relists, 0),
  relistsFromProxy: fs.reduce((s, x) => s + x.relistsFromProxy, 0),
  rewatches: fs.reduce((s, x) => s + x.rewatches, 0),
  watchFailures: fs.reduce((s, x) => s + x.watchFailures, 0),
});
const minus = (a: ReturnType<typeof snap>, b: ReturnType<typeof snap>) => ({
  relists: a.relists - b.relists,
  relistsFromProxy: a.relistsFromProxy - b.relistsFromProxy,
  rewatches: a.rewatches - b.rewatches,
  watchFailures: a.watchFailures - b.watchFailures,
});

/** Whether every client's store and the proxy's RV="0" LIST equal a direct LIST (name → RV). */
async function storesEqual(proxyUrl: string, fs: Follower[]): Promise<{ clients: boolean; proxy: boolean }> {
  const key = (items: Item[]) =>
    items
      .map((i) => `${i.metadata.name}@${i.metadata.resourceVersion}`)
      .sort()
      .join(',');
  const direct = key((await call(f.server, 'GET', cms)).json?.items ?? []);
  const viaProxy = key((await call(proxyUrl, 'GET', `${cms}?resourceVersion=0`)).json?.items ?? []);
  const clients = fs.every(
    (x) =>
      [...x.store.entries()]
        .map(([n, rv]) => `${n}@${rv}`)
        .sort()
        .join(',') === direct,
  );
  return { clients, proxy: viaProxy === direct };
}

const phases: Record<string, unknown>[] = [];
try {
  await call(f.server, 'POST', '/api/v1/namespaces', { metadata: { name: NS } });
  const blob = 'x'.repeat(1024);
  for (let i = 0; i < OBJECTS; i += 16)
    await Promise.all(
      Array.from({ length: Math.min(16, OBJECTS - i) }, (_, k) =>
        call(f.server, 'POST', cms, { metadata: { name: `cm-${i + k}` }, data: { blob, n: '0' } }),
      ),
    );
  const proxy = await startProxy({
    kubeconfig: f.kubeconfigs.adminToken,
    resources: ['configmaps'],
    cpu: '1',
    extraArgs: NAMESPACE_CACHE ? [`--namespace=${NS}`] : [],
  });
  try {
    const via = Array.from({ length: FOLLOWERS }, () => new Follower(proxy.url));
    const direct = Array.from({ length: FOLLOWERS }, () => new Follower(f.server));
    await Promise.all([...via, ...direct].map((x) => x.start()));
    await writeFor(5000);
    await caughtUp([...via, ...direct]);

    // 1. Frozen.
    {
      const v0 = snap(via);
      const d0 = snap(direct);
      const up0 = await apiserverCounts();
      const r0 = await proxyRelists(proxy.opsUrl);
      log(`outage: SIGSTOP the apiserver for ${FREEZE_MS / 1000} s`);
      const pid = f.pids().apiserver;
      process.kill(pid, 'SIGSTOP');
      const reads = await cachedReads(proxy.url, sleep(FREEZE_MS));
      process.kill(pid, 'SIGCONT');
      const during = { via: minus(snap(via), v0), direct: minus(snap(direct), d0) };
      await writeFor(5000);
      const catchUpMs = await caughtUp([...via, ...direct]);
      const up1 = await apiserverCounts();
      const r1 = await proxyRelists(proxy.opsUrl);
      const equal = await storesEqual(proxy.url, via);
      const row = {
        phase: 'frozen',
        seconds: FREEZE_MS / 1000,
        cachedReads: reads,
        duringOutage: during,
        after: { via: minus(snap(via), v0), direct: minus(snap(direct), d0) },
        upstream: { lists: up1.lists - up0.lists, watches: up1.watches - up0.watches },
        proxyRelists: Object.fromEntries(Object.entries(r1).map(([k, v]) => [k, v - (r0[k] ?? 0)])),
        catchUpMs,
        storesEqualDirect: { ...equal, directClients: (await storesEqual(proxy.url, direct)).clients },
        writes: writer.sent,
        failedWrites: writer.failed,
      };
      console.log(JSON.stringify(row));
      phases.push(row);
    }

    // 2. Killed and restarted.
    {
      const v0 = snap(via);
      const d0 = snap(direct);
      const r0 = await proxyRelists(proxy.opsUrl);
      log(`outage: SIGKILL the apiserver, restart after ${DOWN_MS / 1000} s`);
      process.kill(f.pids().apiserver, 'SIGKILL');
      const t0 = performance.now();
      const reads = await cachedReads(proxy.url, sleep(DOWN_MS));
      await f.restartApiserver();
      const restartMs = Math.round(performance.now() - t0);
      pinFixture();
      if (QUIET_RESTART) {
        const relists = async () =>
          Object.values(await proxyRelists(proxy.opsUrl)).reduce((a, b) => a + b, 0);
        const before = Object.values(r0).reduce((a, b) => a + b, 0);
        while ((await relists()) === before) await sleep(200);
      }
      // Counted by the new process from its start: everything since the restart.
      await writeFor(5000);
      const catchUpMs = await caughtUp([...via, ...direct]);
      const up1 = await apiserverCounts();
      const r1 = await proxyRelists(proxy.opsUrl);
      const equal = await storesEqual(proxy.url, via);
      const row = {
        phase: 'killed-restarted',
        seconds: restartMs / 1000,
        cachedReads: reads,
        after: { via: minus(snap(via), v0), direct: minus(snap(direct), d0) },
        upstreamSinceRestart: up1,
        // The apiserver's LISTs minus the direct clients' relists: the proxy's own.
        proxyUpstreamLists: up1.lists - minus(snap(direct), d0).relists,
        proxyRelists: Object.fromEntries(Object.entries(r1).map(([k, v]) => [k, v - (r0[k] ?? 0)])),
        catchUpMs,
        storesEqualDirect: { ...equal, directClients: (await storesEqual(proxy.url, direct)).clients },
        writes: writer.sent,
        failedWrites: writer.failed,
      };
      console.log(JSON.stringify(row));
      phases.push(row);
    }
    await Promise.all([...via, ...direct].map((x) => x.stop()));
  } finally {
    await proxy.stop();
  }
  if (OUT) {
    const prev = existsSync(OUT)
      ? (JSON.parse(readFileSync(OUT, 'utf8')) as { runs: unknown[] })
      : { runs: [] };
    prev.runs.push({
      date: new Date().toISOString(),
      options: {
        followers: FOLLOWERS,
        objects: OBJECTS,
        rate: RATE,
        freezeS: FREEZE_MS / 1000,
        downS: DOWN_MS / 1000,
      },
      phases,
    });
    writeFileSync(OUT, `${JSON.stringify(prev, null, 2)}\n`);
  }
} finally {
  writer.stopped = true;
  await writing;
  await agent.close();
  await f.stop();
  process.exit(0);
}
