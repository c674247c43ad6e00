/**
 * `npm run bench [-- --quick] [-- --out DIR]`: kube-cache-proxy side by side with the real
 * kube-apiserver (test/fixture), one scenario after the other in one run (issue 6). Writes
 * DIR/latest.json (quick: quick.json), a Markdown report and an SVG chart (default DIR
 * bench/results); a full run also refreshes docs/benchmarks.md and the README's headline.
 *
 * CPU layout on the 2-core machine (taskset): apiserver + etcd + this orchestrator (seeding, the
 * watch writer) on CPU 0; the proxy (and the ceiling server) on CPU 1; the load generator on the
 * core the server under test is NOT on: CPU 1 for DIRECT, CPU 0 for PROXY and CEILING. The
 * pass-through rows differ (bench/scenarios/passthrough.ts): apiserver + etcd alone on CPU 0, everything
 * else, the load generator for every target included, on CPU 1.
 *
 * A row that fails or times out is recorded in `failures` (bench/support/rows.ts) and the run goes on;
 * the results are written whatever happened after the fixture started.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { createUpstream, type Upstream } from '../src/upstream/connection.ts';
import { type Fixture, startFixture, writeKubeconfig } from '../test/fixture/index.ts';
import { renderMarkdown, renderSvg, updateDocs } from './report/report.ts';
import type { BenchResults, MemoryRow } from './report/results.ts';
import { identityScenario } from './scenarios/identity.ts';
import { NODE_LOCAL_FULL, NODE_LOCAL_QUICK, nodeLocalScenario } from './scenarios/node-local.ts';
import { type PassthroughRun, passthroughScenario, startKubectlProxy } from './scenarios/passthrough.ts';
import { STREAMS_FULL, STREAMS_QUICK, streamsScenario } from './scenarios/streams.ts';
import { diffUpstream, upstreamCounters } from './support/apiserver-metrics.ts';
import { clientHeaders, type LoadResult, runLoad } from './support/load.ts';
import { listSize, measureProxy, memoryRow, seedWidgets, WIDGETS } from './support/memory.ts';
import { cpuMeter, cpuSeconds, peakRssBytes, pin, round, rssBytes } from './support/proc.ts';
import { buildDist, type ProxyProcess, startProxy } from './support/proxy-process.ts';
import { RowFailures } from './support/rows.ts';
import { nodeName, nsName, type PodDataset, podName, seedPods } from './support/seed.ts';
import { seedConfigMaps } from './support/sync-support.ts';
import { runWriter, type WriterResult } from './support/writer.ts';
import type { WatchResult } from './workers/watch-worker.ts';

const APISERVER_CPU = '0';
const PROXY_CPU = '1';
const loadCpu = (target: string) => (target.startsWith('direct') ? PROXY_CPU : APISERVER_CPU);
const MiB = 2 ** 20;

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const outIdx = argv.indexOf('--out');
const outDir = outIdx >= 0 ? argv[outIdx + 1]! : fileURLToPath(new URL('./results/', import.meta.url));
const P = quick
  ? {
      data: { pods: 1000, namespaces: 10, nodes: 10, podBytes: 5000 } satisfies PodDataset,
      configMaps: 1000,
      widgets: 500,
      heapSnapshots: ['pods', 'configmaps', WIDGETS.resource],
      listS: 2,
      connections: 4,
      listQueries: ['all-rv0', 'get'],
      watchers: [1, 10, 100],
      watchRates: [100] as Array<number | 'max'>,
      watchS: 2,
      probes: [1, 5],
      probeMs: 1000,
      passS: 1,
      passReps: 3,
      passConnections: 1,
      // Issue 10: 100 identities; each row at least twice the decision-cache TTLs.
      identity: { identities: 100, durationS: 2, ttlS: 1 },
    }
  : {
      data: { pods: 10_000, namespaces: 100, nodes: 50, podBytes: 5000 } satisfies PodDataset,
      configMaps: 100_000,
      widgets: 10_000,
      heapSnapshots: ['pods', WIDGETS.resource],
      listS: 8,
      connections: 4,
      listQueries: ['all-rv0', 'all-rv', 'namespace', 'node', 'get'],
      watchers: [1, 10, 100, 1000],
      watchRates: [100, 'max'] as Array<number | 'max'>,
      watchS: 6,
      probes: [1, 10, 50],
      probeMs: 2000,
      passS: 4,
      passReps: 5,
      passConnections: 1,
      identity: { identities: 100, durationS: 20, ttlS: 10 },
    };

const log = (msg: string) => process.stderr.write(`bench ${new Date().toISOString().slice(11, 19)} ${msg}\n`);
const failures = new RowFailures(log);
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

const QUERY_LABEL: Record<string, string> = {
  'all-rv0': 'LIST all pods, RV=0',
  'all-rv': 'LIST all pods, RV=""',
  namespace: 'LIST one namespace',
  node: 'LIST spec.nodeName=X',
  get: 'GET one pod',
};

/** The Kubernetes API path of each LIST/GET query. */
function queryPath(q: string): string {
  switch (q) {
    case 'all-rv0':
      return '/api/v1/pods?resourceVersion=0';
    case 'all-rv':
      return '/api/v1/pods';
    case 'namespace':
      return `/api/v1/namespaces/${nsName(1)}/pods?resourceVersion=0`;
    case 'node':
      return `/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3D${nodeName(7)}`;
    default:
      return `/api/v1/namespaces/${nsName(3)}/pods/${podName(3)}`;
  }
}

/** One response's wire facts: Content-Encoding and body bytes as received. */
async function probeResponse(url: string, headers: Record<string, string>) {
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  const res = await request(url, { dispatcher, headers });
  const body = Buffer.from(await res.body.arrayBuffer());
  await dispatcher.close();
  return {
    status: res.statusCode,
    encoding: String(res.headers['content-encoding'] ?? 'identity'),
    bytes: body.length,
    body,
  };
}

interface ListRow extends LoadResult {
  query: string;
  target: string;
  encoding: string;
  responseBytes: number;
  /** Cores used by the server under test (apiserver+etcd for direct, proxy for proxy). */
  serverCores: number;
  /** Cores used by apiserver+etcd during a proxy/ceiling run (should be ~0 when served from cache). */
  apiserverCores: number;
  serverRssMiB: number;
}

async function listScenario(f: Fixture, proxy: ProxyProcess, apiPids: number[]): Promise<ListRow[]> {
  const rows: ListRow[] = [];
  const token = f.tokens.admin;
  const run = async (query: string, target: string, base: string, gzip: boolean, pids: number[]) => {
    const url = base + queryPath(query);
    const headers = clientHeaders(token, gzip);
    const wire = await probeResponse(url, headers);
    if (wire.status !== 200)
      throw new Error(`${target} ${url}: ${wire.status} ${wire.body.toString().slice(0, 300)}`);
    const server = cpuMeter(pids);
    const api = cpuMeter(apiPids);
    const r = await runLoad(
      { url, connections: P.connections, durationS: P.listS, headers },
      loadCpu(target),
    );
    const row: ListRow = {
      query,
      target,
      encoding: wire.encoding,
      responseBytes: wire.bytes,
      ...r,
      serverCores: server(),
      apiserverCores: api(),
      serverRssMiB: round(pids.reduce((s, p) => s + rssBytes(p), 0) / MiB),
    };
    log(
      `list ${query} ${target}: ${round(r.rps)} req/s p50 ${r.p50Ms} p99 ${r.p99Ms} ms ${wire.encoding} ${wire.bytes} B`,
    );
    rows.push(row);
    return wire;
  };
  const attempt = (q: string, target: string, fn: () => Promise<unknown>) =>
    failures.attempt('LIST/GET', `${QUERY_LABEL[q] ?? q} ${target}`, fn, (P.listS + 180) * 1000);
  for (const q of P.listQueries) {
    await attempt(q, 'direct (gzip)', () => run(q, 'direct (gzip)', f.server, true, apiPids));
    await attempt(q, 'direct (identity)', () => run(q, 'direct (identity)', f.server, false, apiPids));
    await attempt(q, 'proxy', () => run(q, 'proxy', proxy.url, true, [proxy.pid]));
    if (q === 'all-rv0') {
      await attempt(q, 'ceiling', async () => {
        const file = join(mkdtempSync(join(tmpdir(), 'kcp-bench-')), 'list.json');
        try {
          const plain = await probeResponse(proxy.url + queryPath(q), clientHeaders(token, false));
          writeFileSync(file, plain.body);
          const ceiling = await startCeiling(file);
          try {
            await run(q, 'ceiling', ceiling.url, true, [ceiling.child.pid!]);
          } finally {
            ceiling.child.kill('SIGKILL');
          }
        } finally {
          rmSync(dirname(file), { recursive: true, force: true });
        }
      });
    }
  }
  return rows;
}

async function startCeiling(file: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    'taskset',
    ['-c', PROXY_CPU, process.execPath, here('./workers/ceiling-server.ts'), file],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (c) => reject(new Error(`ceiling server exited ${c}`)));
  });
  return { url, child };
}

interface WatchRow extends WatchResult {
  target: string;
  writer: WriterResult;
  serverCores: number;
}

/** Runs the watch worker pinned to `cpu` while the writer writes; resolves with its result. */
async function watchRun(
  up: Upstream,
  pods: string[],
  spec: { url: string; headers: Record<string, string>; watchers: number; stalled: number },
  rate: number | 'max',
  writeMs: number,
  cpu: string,
  pids: number[],
): Promise<{ result: WatchResult; writer: WriterResult; serverCores: number }> {
  const measureMs = writeMs + 1500;
  const child = spawn(
    'taskset',
    [
      '-c',
      cpu,
      process.execPath,
      here('./workers/watch-worker.ts'),
      JSON.stringify({ ...spec, measureMs, rateWindowMs: writeMs }),
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-2000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready\n')) resolve();
    });
    child.once('exit', (c) => reject(new Error(`watch worker exited ${c} before ready: ${err}`)));
  });
  const meter = cpuMeter(pids);
  const writer = await runWriter(up, pods, rate, writeMs);
  const serverCores = meter();
  await exited;
  const line = out.trim().split('\n').pop() ?? '';
  if (!line.startsWith('{')) throw new Error(`watch worker: no result: ${err}`);
  return { result: JSON.parse(line) as WatchResult, writer, serverCores };
}

async function currentRv(up: Upstream): Promise<string> {
  const auth = await up.authorization();
  const res = await request(`${up.baseUrl}/api/v1/pods?limit=1`, {
    dispatcher: up.dispatcher,
    headers: auth ? { authorization: auth } : {},
  });
  return ((await res.body.json()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
}

async function watchScenario(
  f: Fixture,
  up: Upstream,
  proxy: ProxyProcess,
  apiPids: number[],
  pods: string[],
) {
  const rows: WatchRow[] = [];
  for (const rate of P.watchRates) {
    for (const n of P.watchers) {
      for (const target of ['direct', 'proxy']) {
        const base = target === 'direct' ? f.server : proxy.url;
        const rv = await currentRv(up);
        const url = `${base}/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`;
        const headers = clientHeaders(f.tokens.admin, true);
        const pids = target === 'direct' ? apiPids : [proxy.pid];
        const r = await failures.attempt(
          'watch fan-out',
          `${n} watchers ${target} @${rate}`,
          () =>
            watchRun(
              up,
              pods,
              { url, headers, watchers: n, stalled: 0 },
              rate,
              P.watchS * 1000,
              loadCpu(target),
              pids,
            ),
          (P.watchS + 240) * 1000,
        );
        if (!r) continue;
        rows.push({ target, ...r.result, writer: r.writer, serverCores: r.serverCores });
        log(
          `watch ${n} ${target} @${rate}: ${r.writer.achievedRate} w/s, ${r.result.eventsPerSec} ev/s p50 ${r.result.p50Ms} p99 ${r.result.p99Ms} ms`,
        );
      }
    }
  }
  return rows;
}

async function slowConsumerScenario(
  f: Fixture,
  up: Upstream,
  proxy: ProxyProcess,
  apiPids: number[],
  pods: string[],
) {
  const rows: WatchRow[] = [];
  for (const target of ['direct', 'proxy']) {
    const base = target === 'direct' ? f.server : proxy.url;
    const rv = await currentRv(up);
    const url = `${base}/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`;
    const pids = target === 'direct' ? apiPids : [proxy.pid];
    const r = await failures.attempt(
      'slow consumer',
      target,
      () =>
        watchRun(
          up,
          pods,
          { url, headers: clientHeaders(f.tokens.admin, true), watchers: 99, stalled: 1 },
          100,
          // Long enough for the stalled watch to overflow the proxy's 1,000-event buffer plus socket buffers.
          (quick ? 5 : 25) * 1000,
          loadCpu(target),
          pids,
        ),
      300_000,
    );
    if (!r) continue;
    rows.push({ target, ...r.result, writer: r.writer, serverCores: r.serverCores });
    log(
      `slow consumer ${target}: p99 ${r.result.p99Ms} ms, stalled closed ${r.result.stalledClosed}, got ${r.result.stalledBytes} B`,
    );
  }
  return rows;
}

function runProbes(bin: string, kubeconfig: string, n: number, cpu: string): Promise<number[]> {
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<number>((resolve, reject) => {
          execFile(
            'taskset',
            [
              '-c',
              cpu,
              bin,
              `--kubeconfig=${kubeconfig}`,
              '--resource=pods',
              `--duration=${P.probeMs}ms`,
              '--quiet',
              '--sync-timeout=600s',
            ],
            {
              maxBuffer: 256 * MiB,
              timeout: 700_000,
              env: { ...process.env, KUBE_FEATURE_WatchListClient: 'true' },
            },
            (err, stdout, stderr) => {
              if (err) return reject(new Error(`probe: ${err.message} ${stderr.slice(-500)}`));
              const synced = stdout.split('\n').find((l) => l.includes('"synced"'));
              resolve(synced ? (JSON.parse(synced) as { elapsedMs: number }).elapsedMs : -1);
            },
          );
        }),
    ),
  );
}

async function upstreamScenario(
  f: Fixture,
  up: Upstream,
  apiPids: number[],
  proxyKubeconfig: (url: string) => Promise<string>,
) {
  const rows = [];
  for (const n of P.probes) {
    for (const target of ['direct', 'proxy']) {
      const before = await upstreamCounters(up, 'pods');
      const c0 = apiPids.reduce((s, p) => s + cpuSeconds(p), 0);
      const t0 = performance.now();
      const synced = await failures.attempt(
        'upstream load',
        `${n} informers ${target}`,
        async () => {
          let proxy: ProxyProcess | undefined;
          try {
            let kc = f.kubeconfigs.adminToken;
            if (target === 'proxy') {
              proxy = await startProxy({
                kubeconfig: f.kubeconfigs.adminToken,
                resources: ['pods'],
                cpu: PROXY_CPU,
              });
              kc = await proxyKubeconfig(proxy.url);
            }
            return await runProbes(f.bin.probe, kc, n, loadCpu(target));
          } finally {
            await proxy?.stop();
          }
        },
        // The probes' own limit (--sync-timeout=600s, killed at 700 s) plus the proxy's start: 50
        // informers through the proxy took 259–286 s on a 2-core Xeon (300 s was too tight).
        760_000,
      );
      if (!synced) continue;
      const wallS = (performance.now() - t0) / 1000;
      const apiCpuS = apiPids.reduce((s, p) => s + cpuSeconds(p), 0) - c0;
      const d = diffUpstream(before, await upstreamCounters(up, 'pods'));
      const sorted = synced.sort((a, b) => a - b);
      const row = {
        probes: n,
        target,
        ...d,
        upstreamMiB: round((d.listBytes + d.watchBytes) / MiB),
        apiserverCpuS: round(apiCpuS, 2),
        wallS: round(wallS, 1),
        syncP50Ms: sorted[Math.floor(sorted.length / 2)] ?? -1,
        syncMaxMs: sorted[sorted.length - 1] ?? -1,
      };
      log(`upstream N=${n} ${target}: ${JSON.stringify(row)}`);
      rows.push(row);
    }
  }
  return rows;
}

function syncRun(kubeconfig: string, ns: string, mode: string, resource: string) {
  return new Promise<{
    mode: string;
    objects: number;
    ms: number;
    listRequests: number;
    peakRssMiB: number;
    rssBeforeMiB: number;
  }>((resolve, reject) => {
    execFile(
      'taskset',
      ['-c', PROXY_CPU, process.execPath, here('./workers/sync-run.ts'), kubeconfig, ns, mode, resource],
      { maxBuffer: 16 * MiB, timeout: 900_000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`sync-run ${mode}: ${err.message} ${stderr.slice(-1000)}`));
        resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '{}'));
      },
    );
  });
}

/**
 * Memory per resource (bench/support/memory.ts: RSS and heapUsed 2 s after ready and after a forced GC)
 * and the reflector's own cold sync (bench/workers/sync-run.ts).
 */
async function coldScenario(f: Fixture, up: Upstream, ns: { configMaps?: string; widgets?: string }) {
  const proxy: MemoryRow[] = [];
  // What the image runs (no type stripping: ~30 MiB less RSS); src/cli.ts if the build fails.
  const built = await failures.attempt('memory', 'npm run build (dist/)', async () => buildDist());
  memoryCli = relative(here('..'), built ?? here('../src/cli.ts'));
  const measure = (resource: string) =>
    measureProxy({
      kubeconfig: f.kubeconfigs.adminToken,
      resource,
      cpu: PROXY_CPU,
      heapSnapshot: P.heapSnapshots.includes(resource.split('.')[0]!),
      ...(built ? { cli: built } : {}),
    });
  const empty = await failures.attempt('memory', 'empty cache', () => measure('limitranges'), 300_000);
  if (empty)
    proxy.push(
      memoryRow(
        'proxy, empty cache (limitranges)',
        'limitranges',
        { objects: 0, jsonBytes: 0 },
        empty,
        empty,
      ),
    );
  const sets: Array<[string, string, string]> = [['pods', 'pods', '/api/v1/pods']];
  if (ns.configMaps)
    sets.push(['configmaps', 'configmaps', `/api/v1/namespaces/${ns.configMaps}/configmaps`]);
  if (ns.widgets)
    sets.push([
      'custom resource (Widget)',
      `${WIDGETS.resource}.${WIDGETS.group}`,
      `/apis/${WIDGETS.group}/v1/namespaces/${ns.widgets}/${WIDGETS.resource}`,
    ]);
  for (const [label, resource, path] of sets) {
    const row = await failures.attempt(
      'memory',
      label,
      async () => {
        // The proxy caches the resource in every namespace: count and size that same set.
        const all = resource === 'configmaps' ? '/api/v1/configmaps' : path;
        return memoryRow(
          `proxy ${label} (watch-list)`,
          resource,
          await listSize(up, all),
          await measure(resource),
          empty,
        );
      },
      900_000,
    );
    if (row) proxy.push(row);
  }
  log(`memory: ${JSON.stringify(proxy.map(({ heap: _h, ...r }) => r))}`);
  const reflector = [];
  const syncSets: Array<[string, string]> = [['pods', '-']];
  if (ns.configMaps) syncSets.push(['configmaps', ns.configMaps]);
  for (const [resource, namespace] of syncSets) {
    for (const mode of ['watch-list', 'list']) {
      const r = await failures.attempt('reflector sync', `${resource} ${mode}`, () =>
        syncRun(f.kubeconfigs.adminToken, namespace, mode, resource),
      );
      if (!r) continue;
      reflector.push({ resource, ...r });
      log(`reflector ${resource} ${mode}: ${JSON.stringify(r)}`);
    }
  }
  return { proxy, reflector };
}

function versions(f: Fixture) {
  const pkg = (p: string) => (JSON.parse(readFileSync(p, 'utf8')) as { version: string }).version;
  const c = cpus();
  return {
    date: new Date().toISOString(),
    mode: quick ? 'quick' : 'full',
    kubeApiserver: f.version,
    kubeCacheProxy: pkg(here('../package.json')),
    node: process.version,
    autocannon: pkg(here('../node_modules/autocannon/package.json')),
    machine: {
      cpus: c.length,
      cpuModel: c[0]?.model ?? '',
      memGiB: round(totalmem() / 2 ** 30),
      loadavgAtStart: loadavg().map((x) => round(x, 2)),
    },
    pinning: {
      [`CPU ${APISERVER_CPU}`]:
        'kube-apiserver + etcd + orchestrator (seeding, watch writer); load generator for PROXY/CEILING runs; in the pass-through rows kube-apiserver + etcd alone',
      [`CPU ${PROXY_CPU}`]:
        'kube-cache-proxy, ceiling server, reflector sync runs; load generator for DIRECT runs; in the pass-through rows the load generator (every target), kube-cache-proxy, kubectl proxy and the orchestrator',
    },
    dataset: { ...P.data, configMaps: P.configMaps, widgets: P.widgets },
    durations: {
      listS: P.listS,
      connections: P.connections,
      watchS: P.watchS,
      passS: P.passS,
      passReps: P.passReps,
      passConnections: P.passConnections,
      probeMs: P.probeMs,
      identityS: P.identity.durationS,
      identityTtlS: P.identity.ttlS,
    },
  };
}

async function main(): Promise<void> {
  const t0 = performance.now();
  pin(process.pid, APISERVER_CPU);
  const f = await startFixture({ verbose: false });
  const apiPids = [f.pids().apiserver, f.pids().etcd];
  for (const p of apiPids) pin(p, APISERVER_CPU);
  const work = mkdtempSync(join(tmpdir(), 'kcp-bench-kc-'));
  const meta = versions(f);
  const r: Omit<BenchResults, 'meta'> & { passthroughRuns: PassthroughRun[] } = {
    list: [],
    watch: [],
    slowConsumer: [],
    upstream: [],
    cold: { proxy: [], reflector: [] },
    passthrough: [],
    passthroughRuns: [],
    failures: failures.rows,
  };
  const extra = { seedPodsS: 0, seedCmS: 0, seedWidgetsS: 0, proxyPeakRssMiB: 0 };
  let up: Upstream | undefined;
  try {
    up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
    const u = up;
    const seed = async (what: string, fn: () => Promise<void>) => {
      const t = performance.now();
      await fn();
      const sec = round((performance.now() - t) / 1000);
      log(`seeded ${what} in ${sec} s`);
      return sec;
    };
    extra.seedPodsS = await seed(`${P.data.pods} pods`, () => seedPods(u, P.data));
    const ns: { configMaps?: string; widgets?: string } = {};
    if (P.configMaps > 0) {
      ns.configMaps = await f.newNamespace('bench-cm');
      extra.seedCmS = await seed(`${P.configMaps} configmaps`, () =>
        seedConfigMaps(u, ns.configMaps!, P.configMaps, { bytes: 1024, concurrency: 32 }),
      );
    }
    if (P.widgets > 0) {
      const wns = await f.newNamespace('bench-cr');
      const ok = await failures.attempt('seed', `${P.widgets} widgets`, async () => {
        extra.seedWidgetsS = await seed(`${P.widgets} widgets`, () => seedWidgets(u, wns, P.widgets));
        return true;
      });
      if (ok) ns.widgets = wns;
    }
    const pods = Array.from(
      { length: Math.min(P.data.pods, 500) },
      (_, i) => `${nsName(i % P.data.namespaces)}/${podName(i)}`,
    );
    const proxy = await failures.attempt('proxy', 'start (pods)', () =>
      startProxy({ kubeconfig: f.kubeconfigs.adminToken, resources: ['pods'], cpu: PROXY_CPU }),
    );
    if (proxy) {
      try {
        log(`proxy ready in ${proxy.readyMs} ms (${proxy.url})`);
        r.list = await listScenario(f, proxy, apiPids);
        r.watch = await watchScenario(f, u, proxy, apiPids, pods);
        r.slowConsumer = await slowConsumerScenario(f, u, proxy, apiPids, pods);
        const pt = await passthroughRows(f, u, proxy);
        r.passthrough = pt.rows;
        r.passthroughRuns = pt.runs;
        extra.proxyPeakRssMiB = round(peakRssBytes(proxy.pid) / MiB);
      } finally {
        await proxy.stop();
      }
    }
    const proxyKubeconfig = (url: string) =>
      writeKubeconfig(join(work, `proxy-${url.split(':').pop()}.kubeconfig`), {
        server: url,
        user: { token: f.tokens.admin },
      });
    r.identity =
      (await failures.attempt('identity', '100 identities over TLS', () =>
        identityScenario(
          f,
          u,
          { ...P.identity, connections: P.connections, proxyCpu: PROXY_CPU, loadCpu },
          log,
        ),
      )) ?? [];
    r.upstream = await upstreamScenario(f, u, apiPids, proxyKubeconfig);
    r.cold = await coldScenario(f, u, ns);
    // Issue 13 (bench/scenarios/node-local.ts): kube-apiserver + etcd alone on CPU 0, the rest on CPU 1.
    pin(process.pid, PROXY_CPU);
    try {
      const nl = await nodeLocalScenario(
        f,
        u,
        quick ? NODE_LOCAL_QUICK : NODE_LOCAL_FULL,
        { apiserver: APISERVER_CPU, other: PROXY_CPU },
        log,
      );
      r.nodeLocal = nl;
      failures.rows.push(...nl.failures.map((x) => ({ ...x, scenario: `node-local: ${x.scenario}` })));
    } finally {
      pin(process.pid, APISERVER_CPU);
    }
    // On its own fixture that runs pods (the main one is idle from here on).
    r.streams =
      (await failures.attempt('streams', 'exec and port-forward', () =>
        streamsScenario(
          quick ? STREAMS_QUICK : STREAMS_FULL,
          { apiserver: APISERVER_CPU, proxy: PROXY_CPU },
          log,
        ),
      )) ?? [];
  } catch (err) {
    // Outside any row (seeding, the fixture): still write what was measured.
    failures.rows.push({
      scenario: 'run',
      row: 'orchestrator',
      error: err instanceof Error ? err.message : String(err),
      atS: round((performance.now() - t0) / 1000),
    });
    log(`FAILED run: ${err instanceof Error ? err.stack : String(err)}`);
  } finally {
    await up?.close().catch(() => {});
    try {
      writeResults({
        meta: {
          ...meta,
          ...extra,
          totalS: round((performance.now() - t0) / 1000),
          ...(memoryCli ? { memoryCli } : {}),
          loadavgAtEnd: loadavg().map((x) => round(x, 2)),
        },
        ...r,
      });
    } finally {
      await f.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }
  if (failures.rows.length) process.exitCode = 1;
}

/** The CLI the memory rows ran (set by them: the bundle, or src/cli.ts when the build failed). */
let memoryCli: string | undefined;

/** The pass-through rows, with `kubectl proxy` as the Go peer (bench/scenarios/passthrough.ts). */
async function passthroughRows(f: Fixture, up: Upstream, proxy: ProxyProcess) {
  const kp = await failures.attempt('pass-through', 'start kubectl proxy', () =>
    startKubectlProxy(f.bin.kubectl, f.kubeconfigs.adminToken, PROXY_CPU),
  );
  // kube-apiserver + etcd alone on their core for these rows.
  pin(process.pid, PROXY_CPU);
  try {
    return await passthroughScenario({
      apiserverUrl: f.server,
      proxyUrl: proxy.url,
      kubectlProxyUrl: kp?.url,
      token: f.tokens.admin,
      upstream: up,
      configMapPath: `/api/v1/namespaces/${nsName(0)}/configmaps/bench-passthrough`,
      podPath: `/api/v1/namespaces/${nsName(0)}/pods/${podName(0)}`,
      cpu: PROXY_CPU,
      connections: P.passConnections,
      durationS: P.passS,
      reps: P.passReps,
      log,
      failures,
    });
  } finally {
    pin(process.pid, APISERVER_CPU);
    kp?.stop();
  }
}

function writeResults(results: BenchResults): void {
  const name = quick ? 'quick' : 'latest';
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, `${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
  const md = renderMarkdown(results, `${name}.svg`);
  writeFileSync(join(outDir, `${name}.md`), md);
  writeFileSync(join(outDir, `${name}.svg`), renderSvg(results));
  if (!quick && outIdx < 0) updateDocs(results, md, `${name}.svg`);
  log(
    `done in ${results.meta.totalS} s, ${results.failures?.length ?? 0} failed rows → ${join(outDir, `${name}.json`)}`,
  );
  process.stdout.write(md);
}

if (import.meta.main) await main();
