/**
 * The restart row: one proxy caching `--pods` pods, `--services` Services and `--slices`
 * EndpointSlices (objects created directly, no kubelet: pods need not run), 3 client-go informers
 * (test/support/informer-probe.ts: pods, services, endpointslices) and `--watchers` raw watchers
 * on it (a third each: the pods of one `app` label, every Service, every EndpointSlice), while
 * `--rate` writes/s continue (a pod PATCH each, a Service and an EndpointSlice PATCH every 5th).
 * The proxy gets SIGTERM and a new one starts on the same port after each of `--downs` seconds,
 * COLD (memory only) then WARM (`--snapshot-dir`); the clients stay up across the restarts.
 *
 * Per restart, from the SIGTERM until the new proxy is live on every resource and every raw
 * watcher holds the last write of what it watches:
 * - upstream bytes: apiserver → proxy through a counting relay (wire bytes);
 * - where they went, from the apiserver's own metrics: response bytes by verb and resource
 *   (`apiserver_response_sizes_sum`: LIST, GET, POST, discovery) and watch event bytes by kind
 *   (`apiserver_watch_events_sizes_sum`, counted as sent), and the proxy's upstream requests
 *   (`kube_cache_proxy_upstream_requests_total` of the new process);
 * - the apiserver's LISTs (`apiserver_request_total`, the bench's own writes and scrapes excluded);
 * - the writes made meanwhile (their events are bytes any proxy receives, restarted or not);
 * - relists: the raw watchers' (a 410, then a LIST RV="0", as client-go's reflector), the
 *   informers' (the new proxy's LISTs less the raw watchers').
 *
 * A raw watcher resumes from its last RV whenever its stream ends (the proxy going away), as
 * client-go does. Starts a private fixture; the proxy runs src/cli.ts pinned to CPU 1, the
 * fixture to CPU 0. Every run goes to `--out` (JSON), then a Markdown table.
 *   node bench/tools/restart.ts [--pods 10000] [--services 1000] [--slices 1000] [--watchers 50]
 *     [--informers 3] [--rate 10] [--downs 5,30,120] [--runs 2] [--modes cold,warm] [--out FILE]
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { startFixture, writeKubeconfig } from '../../test/fixture/index.ts';
import { type ProbeProcess, startProbe } from '../../test/support/informer-probe.ts';
import { metricSum, parsePrometheus } from '../../test/support/prometheus-text.ts';
import { toolArgs, words } from '../support/args.ts';
import { startByteRelay } from '../support/byte-relay.ts';
import { pin, round } from '../support/proc.ts';
import { type ProxyProcess, startProxy } from '../support/proxy-process.ts';
import { fillerText, parallel } from '../support/seed.ts';

const a = toolArgs({
  numbers: {
    pods: 10000,
    services: 1000,
    slices: 1000,
    watchers: 50,
    informers: 3,
    rate: 10,
    runs: 2,
    apps: 100,
    'pod-filler': 1000,
    'grace-s': 30,
  },
  lists: ['proxy-args'],
  strings: {
    'proxy-log': undefined,
    downs: '5,30,120',
    modes: 'cold,warm',
    out: undefined,
    'snapshot-interval': undefined,
  },
});
const DOWNS = (a.downs ?? '5,30,120').split(',').map(Number);
const MODES = (a.modes ?? 'cold,warm').split(',') as Array<'cold' | 'warm'>;
const NS = 'kcp-restart';
const RESOURCES = ['pods', 'services', 'endpointslices'] as const;
type Res = (typeof RESOURCES)[number];
const log = (m: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${m}\n`);

pin(process.pid, '1');
const f = await startFixture({ verbose: false });
for (const p of Object.values(f.pids())) pin(p, '0');
const agent = new Agent({ connect: { ca: f.caPem }, connections: 32 });
const auth = { authorization: `Bearer ${f.tokens.admin}` };
const work = await mkdtemp(join(tmpdir(), 'kcp-restart-'));
const relay = await startByteRelay('127.0.0.1', Number(new URL(f.server).port));
const kubeconfig = await writeKubeconfig(join(work, 'relay.kubeconfig'), {
  server: `https://127.0.0.1:${relay.port}`,
  caFile: f.caFile,
  user: { token: f.tokens.admin },
});
const collection: Record<Res, string> = {
  pods: `/api/v1/namespaces/${NS}/pods`,
  services: `/api/v1/namespaces/${NS}/services`,
  endpointslices: `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`,
};

async function send(
  method: string,
  path: string,
  body?: unknown,
  type = 'application/json',
): Promise<string> {
  const r = await request(`${f.server}${path}`, {
    dispatcher: agent,
    method: method as 'GET',
    headers: { ...auth, 'content-type': type },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.body.text();
  if (r.statusCode >= 300 && r.statusCode !== 409)
    throw new Error(`${method} ${path}: ${r.statusCode} ${text.slice(0, 200)}`);
  return (JSON.parse(text) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion ?? '';
}

/** POSTs `body` to `path` (409 accepted: a re-run on a kept fixture). */
const create = (path: string, body: unknown) => send('POST', path, body).then(() => {});

// --- seed ---------------------------------------------------------------------------------
const t0 = Date.now();
await send('POST', '/api/v1/namespaces', { metadata: { name: NS } });
await send('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, { metadata: { name: 'default' } });
const app = (i: number) => `app-${i % a.apps}`;
const svcName = (i: number) => `svc-${String(i).padStart(4, '0')}`;
const sliceName = (i: number) => `${svcName(i % a.services)}-${String(i).padStart(5, '0')}`;
await parallel(a.pods, 32, (i) =>
  create(collection.pods, {
    metadata: {
      name: `pod-${String(i).padStart(5, '0')}`,
      labels: { app: app(i) },
      annotations: { 'bench.kcp/filler': fillerText(i, a['pod-filler']) },
    },
    spec: {
      automountServiceAccountToken: false,
      containers: [
        { name: 'main', image: 'registry.example/bench/app:1.0', ports: [{ containerPort: 8080 }] },
      ],
    },
  }),
);
// Headless: the fixture's service CIDR has room for ~250 ClusterIPs.
await parallel(a.services, 32, (i) =>
  create(collection.services, {
    metadata: { name: svcName(i), labels: { app: app(i) } },
    spec: {
      clusterIP: 'None',
      selector: { app: app(i) },
      ports: [{ name: 'http', port: 80, targetPort: 8080 }],
    },
  }),
);
await parallel(a.slices, 32, (i) =>
  create(collection.endpointslices, {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: sliceName(i), labels: { 'kubernetes.io/service-name': svcName(i % a.services) } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: Array.from({ length: 3 }, (_, k) => ({
      addresses: [`10.${(i >> 8) & 255}.${i & 255}.${k + 1}`],
      conditions: { ready: true },
      zone: `zone-${k}`,
    })),
  }),
);
log(
  `seeded ${a.pods} pods, ${a.services} services, ${a.slices} endpointslices in ${(Date.now() - t0) / 1000} s`,
);

// --- writer -------------------------------------------------------------------------------
/** The RV of the last write per resource, and per app label for pods. */
const lastRV: Record<Res, bigint> = { pods: 0n, services: 0n, endpointslices: 0n };
const lastPodRV = new Map<string, bigint>();
let writes = 0;
let writing = true;
const writer = (async () => {
  let n = 0;
  while (writing) {
    const t = Date.now();
    const patch = { metadata: { annotations: { 'bench.kcp/tick': String(n) } } };
    const targets: Array<[Res, number]> = [['pods', n % a.pods]];
    if (n % 5 === 0) targets.push(['services', (n / 5) % a.services], ['endpointslices', (n / 5) % a.slices]);
    for (const [res, i] of targets) {
      const name =
        res === 'pods' ? `pod-${String(i).padStart(5, '0')}` : res === 'services' ? svcName(i) : sliceName(i);
      const rv = await send(
        'PATCH',
        `${collection[res]}/${name}`,
        patch,
        'application/merge-patch+json',
      ).catch(() => '');
      if (!rv) continue;
      writes++;
      lastRV[res] = BigInt(rv);
      if (res === 'pods') lastPodRV.set(app(i), BigInt(rv));
    }
    n++;
    await new Promise((r) => setTimeout(r, Math.max(0, 1000 / a.rate - (Date.now() - t))));
  }
})();

// --- clients ------------------------------------------------------------------------------
const port = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = (s.address() as { port: number }).port;
    s.close(() => resolve(p));
  });
});
const proxyUrl = `http://127.0.0.1:${port}`;
const proxyKubeconfig = await writeKubeconfig(join(work, 'proxy.kubeconfig'), {
  server: proxyUrl,
  user: { token: f.tokens.admin },
});

/** Each raw watcher's ERROR event since the last row: what it resumed from and what it got. */
let watchErrors: Array<{
  watcher: string;
  fromRV: string;
  code: number | undefined;
  message: string;
  atMs: number;
}> = [];

/** A raw watcher as client-go's reflector (see the module comment). */
class Watcher {
  rv = '';
  relists = 0;
  #stop = false;
  #abort = new AbortController();
  readonly done: Promise<void>;
  readonly res: Res;
  readonly selector: string;
  constructor(res: Res, selector: string) {
    this.res = res;
    this.selector = selector;
    this.done = this.#run();
  }
  /** The RV this watcher must reach to hold the last write of what it watches. */
  target(): bigint {
    return this.res === 'pods' ? (lastPodRV.get(this.selector) ?? 0n) : lastRV[this.res];
  }
  #url(extra: string): string {
    const sel = this.selector ? `&labelSelector=app%3D${this.selector}` : '';
    return `${proxyUrl}${collection[this.res]}?${extra}${sel}`;
  }
  async #list(): Promise<void> {
    const r = await request(this.#url('resourceVersion=0'), { headers: auth, signal: this.#abort.signal });
    if (r.statusCode !== 200) {
      await r.body.dump();
      throw new Error(`list ${r.statusCode}`);
    }
    const l = (await r.body.json()) as { metadata: { resourceVersion: string } };
    this.rv = l.metadata.resourceVersion;
  }
  async #run(): Promise<void> {
    while (!this.#stop && this.rv === '')
      await this.#list().catch(() => new Promise((r) => setTimeout(r, 200)));
    while (!this.#stop) {
      const fromRV = this.rv;
      try {
        const r = await request(
          this.#url(`watch=1&allowWatchBookmarks=true&timeoutSeconds=600&resourceVersion=${fromRV}`),
          { headers: auth, signal: this.#abort.signal },
        );
        let buf = '';
        for await (const c of r.body) {
          buf += c.toString();
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            const e = JSON.parse(buf.slice(0, i)) as {
              type: string;
              object: { code?: number; message?: string; metadata: { resourceVersion: string } };
            };
            buf = buf.slice(i + 1);
            if (e.type === 'ERROR') {
              watchErrors.push({
                watcher: `${this.res}${this.selector ? ` app=${this.selector}` : ''}`,
                fromRV,
                code: e.object.code,
                message: e.object.message ?? '',
                atMs: Date.now(),
              });
              if (e.object.code === 410) {
                this.relists++;
                this.rv = '';
                while (!this.#stop && this.rv === '')
                  await this.#list().catch(() => new Promise((r) => setTimeout(r, 200)));
              }
              break;
            }
            this.rv = e.object.metadata.resourceVersion;
          }
        }
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
  async stop(): Promise<void> {
    this.#stop = true;
    this.#abort.abort();
    await this.done.catch(() => {});
  }
}

// --- measurements -------------------------------------------------------------------------
async function text(url: string, withAuth: boolean): Promise<string> {
  const r = await request(url, withAuth ? { dispatcher: agent, headers: auth } : {});
  return r.body.text();
}

/** The apiserver's counters the rows read, keyed `family|labels` (see the module comment). */
async function apiserverCounters(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const add = (k: string, v: number) => out.set(k, (out.get(k) ?? 0) + v);
  for (const s of parsePrometheus(await text(`${f.server}/metrics`, true))) {
    const l = s.labels;
    // WATCH response sizes are recorded when a watch ends (the old process's whole stream): left out.
    if (s.name === 'apiserver_response_sizes_sum' && l.verb !== 'PATCH' && l.verb !== 'WATCH')
      add(
        `response bytes|${l.verb} ${l.resource || '<discovery>'}${l.subresource ? `/${l.subresource}` : ''}`,
        s.value,
      );
    else if (s.name === 'apiserver_watch_events_sizes_sum')
      add(`watch event bytes|${l.resource ?? l.kind}`, s.value);
    else if (s.name === 'apiserver_request_total' && l.verb === 'LIST') add(`LIST|${l.resource}`, s.value);
  }
  return out;
}

function diff(after: Map<string, number>, before: Map<string, number>): Record<string, number> {
  const d: Record<string, number> = {};
  for (const [k, v] of after) {
    const x = v - (before.get(k) ?? 0);
    if (x > 0) d[k] = Math.round(x);
  }
  return d;
}

async function proxyMetrics(p: ProxyProcess): Promise<string> {
  return text(`${p.opsUrl}/metrics`, false);
}

async function live(p: ProxyProcess): Promise<void> {
  for (;;) {
    const t = await proxyMetrics(p).catch(() => '');
    if (
      RESOURCES.every(
        (resource) => metricSum(t, 'kube_cache_proxy_reflector_upstream_live', { resource }) === 1,
      )
    )
      return;
    await new Promise((res) => setTimeout(res, 100));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row {
  run: number;
  mode: 'cold' | 'warm';
  downS: number;
  upstreamBytes: number;
  apiserverLists: number;
  writesDuring: number;
  watcherRelists: number;
  informerRelists: number;
  restartToCaughtUpMs: number;
  /** How the old process ended after SIGTERM, and when. */
  shutdown: { how: string; ms: number } | undefined;
  load1: number;
  apiserver: Record<string, number>;
  proxyUpstreamRequests: Record<string, number>;
  /** The raw watchers' ERROR events of this restart (resumed from, code, message). */
  watchErrors: typeof watchErrors;
}
const rows: Row[] = [];
/** Writes every row so far to `--out` (after each restart: a run cut short keeps its rows). */
async function save(): Promise<void> {
  if (!a.out) return;
  const params = { ...a, positionals: undefined };
  const doc = { date: new Date().toISOString(), kubeApiserver: f.version, params, rows };
  await writeFile(a.out, `${JSON.stringify(doc, null, 2)}\n`);
}

for (let run = 1; run <= a.runs; run++) {
  for (const mode of MODES) {
    const dir = await mkdtemp(join(work, `${mode}-`));
    const extraArgs = [
      `--listen=127.0.0.1:${port}`,
      ...words(a['proxy-args']),
      ...(mode === 'warm'
        ? [
            `--snapshot-dir=${join(dir, 's')}`,
            ...(a['snapshot-interval'] ? [`--snapshot-interval=${a['snapshot-interval']}`] : []),
          ]
        : []),
    ];
    const start = () =>
      startProxy({
        kubeconfig,
        resources: ['pods', 'services', 'endpointslices.discovery.k8s.io'],
        cpu: '1',
        extraArgs,
        readyTimeoutMs: 600_000,
        ...(a['proxy-log'] ? { logFile: a['proxy-log'] } : {}),
      });
    let proxy = await start();
    await live(proxy);
    if (proxy.url !== proxyUrl) throw new Error(`proxy on ${proxy.url}, not ${proxyUrl}`);
    const probe = (resource: Res) =>
      startProbe(f.bin.probe, {
        kubeconfig: proxyKubeconfig,
        resource: resource === 'endpointslices' ? 'endpointslices.discovery.k8s.io' : resource,
        namespace: NS,
        untilStopped: true,
        quiet: true,
        watchList: false,
        timeoutMs: 0,
      });
    const informers: ProbeProcess[] = RESOURCES.slice(0, a.informers).map(probe);
    // A probe whose first discovery timed out (client-go's 32 s, a starved proxy at a high load)
    // exits before its sync: started again, at most 3 times, before any restart is measured.
    for (let i = 0; i < informers.length; i++)
      for (let attempt = 1; ; attempt++) {
        const ok = await informers[i]!.synced.then(
          () => true,
          (err: Error) => {
            if (attempt >= 3) throw err;
            log(
              `informer ${RESOURCES[i]} exited before its sync, started again: ${err.message.slice(0, 160)}`,
            );
            return false;
          },
        );
        if (ok) break;
        informers[i] = probe(RESOURCES[i]!);
      }
    const watchers = Array.from(
      { length: a.watchers },
      (_, i) => new Watcher(RESOURCES[i % 3]!, i % 3 === 0 ? app(i / 3) : ''),
    );
    const caughtUp = async () => {
      const targets = watchers.map((w) => w.target());
      while (watchers.some((w, i) => w.rv === '' || BigInt(w.rv) < targets[i]!)) await sleep(50);
    };
    await Promise.all(informers.map((p) => p.synced));
    await caughtUp();
    log(`run ${run} ${mode}: proxy, ${informers.length} informers and ${watchers.length} watchers synced`);
    for (const down of DOWNS) {
      const relists0 = watchers.reduce((n, w) => n + w.relists, 0);
      const bytes0 = relay.bytes().down;
      watchErrors = [];
      const c0 = await apiserverCounters();
      const writes0 = writes;
      const tStop = Date.now();
      await proxy.stop(a['grace-s'] * 1000);
      const shutdown = proxy.ended();
      await sleep(down * 1000);
      proxy = await start();
      await live(proxy);
      await caughtUp();
      const ms = Date.now() - tStop - down * 1000;
      // Informers re-watch or relist on their own backoff: give them a moment to show their LISTs.
      await sleep(3000);
      const pm = await proxyMetrics(proxy);
      const watcherRelists = watchers.reduce((n, w) => n + w.relists, 0) - relists0;
      const proxyLists = metricSum(pm, 'kube_cache_proxy_requests_total', { verb: 'LIST' });
      const proxyUpstreamRequests: Record<string, number> = {};
      for (const s of parsePrometheus(pm))
        if (s.name === 'kube_cache_proxy_upstream_requests_total') {
          const k = `${s.labels.verb} ${s.labels.resource || '<other>'} ${s.labels.code}`;
          proxyUpstreamRequests[k] = (proxyUpstreamRequests[k] ?? 0) + s.value;
        } else if (s.name === 'kube_cache_proxy_requests_total' && s.labels.served_from === 'upstream') {
          const k = `client ${s.labels.verb} ${s.labels.resource} ${s.labels.reason}`;
          proxyUpstreamRequests[k] = (proxyUpstreamRequests[k] ?? 0) + s.value;
        }
      const apiserver = diff(await apiserverCounters(), c0);
      const row: Row = {
        run,
        mode,
        downS: down,
        upstreamBytes: relay.bytes().down - bytes0,
        apiserverLists: Object.entries(apiserver)
          .filter(([k]) => k.startsWith('LIST|'))
          .reduce((n, [, v]) => n + v, 0),
        writesDuring: writes - writes0,
        watcherRelists,
        informerRelists: proxyLists - watcherRelists,
        restartToCaughtUpMs: ms,
        shutdown,
        load1: round(loadavg()[0]!, 1),
        apiserver,
        proxyUpstreamRequests,
        watchErrors,
      };
      log(JSON.stringify(row));
      rows.push(row);
      await save();
    }
    for (const p of informers) p.stop();
    await Promise.all(informers.map((p) => p.done.catch(() => undefined)));
    await Promise.all(watchers.map((w) => w.stop()));
    await proxy.stop();
  }
}
writing = false;
await writer;

console.log(
  '\n| run | restart | down | upstream bytes | apiserver LISTs | writes meanwhile | watcher relists | informer relists | restart → caught up | load |',
);
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows)
  console.log(
    `| ${r.run} | ${r.mode} | ${r.downS} s | ${r.upstreamBytes} | ${r.apiserverLists} | ${r.writesDuring} | ${r.watcherRelists} / ${a.watchers} | ${r.informerRelists} | ${r.restartToCaughtUpMs} ms | ${r.load1} |`,
  );
await relay.close();
await agent.close();
await f.stop();
process.exit(0);
