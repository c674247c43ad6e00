/**
 * `npm run bench [-- --quick] [-- --out DIR]`: kube-cache-proxy side by side with the real
 * kube-apiserver (test/fixture), one scenario after the other in one run (issue 6). Writes
 * DIR/latest.json (quick: quick.json), a Markdown report and an SVG chart (default DIR
 * bench/results); a full run also refreshes docs/benchmarks.md and the README's headline.
 *
 * CPU layout on the 2-core machine (taskset): apiserver + etcd + this orchestrator (seeding, the
 * watch writer) on CPU 0; the proxy (and the ceiling server) on CPU 1; the load generator on the
 * core the server under test is NOT on: CPU 1 for DIRECT, CPU 0 for PROXY and CEILING.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { createUpstream, type Upstream } from '../src/upstream/connection.ts';
import { type Fixture, startFixture, writeKubeconfig } from '../test/fixture/index.ts';
import { diffUpstream, upstreamCounters } from './apiserver-metrics.ts';
import { identityScenario } from './identity.ts';
import { clientHeaders, type LoadResult, runLoad } from './load.ts';
import { cpuMeter, cpuSeconds, peakRssBytes, pin, round, rssBytes } from './proc.ts';
import { type ProxyProcess, startProxy } from './proxy-process.ts';
import { renderMarkdown, renderSvg, updateDocs } from './report.ts';
import { nodeName, nsName, type PodDataset, podName, seedPods } from './seed.ts';
import { STREAMS_FULL, STREAMS_QUICK, streamsScenario } from './streams.ts';
import { seedConfigMaps } from './sync-support.ts';
import type { WatchResult } from './watch-worker.ts';
import { runWriter, type WriterResult } from './writer.ts';

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
      configMaps: 0,
      listS: 2,
      connections: 4,
      listQueries: ['all-rv0', 'get'],
      watchers: [1, 10, 100],
      watchRates: [100] as Array<number | 'max'>,
      watchS: 2,
      probes: [1, 5],
      probeMs: 1000,
      passS: 2,
      // Issue 10: 100 identities; each row at least twice the decision-cache TTLs.
      identity: { identities: 100, durationS: 2, ttlS: 1 },
    }
  : {
      data: { pods: 10_000, namespaces: 100, nodes: 50, podBytes: 5000 } satisfies PodDataset,
      configMaps: 100_000,
      listS: 8,
      connections: 4,
      listQueries: ['all-rv0', 'all-rv', 'namespace', 'node', 'get'],
      watchers: [1, 10, 100, 1000],
      watchRates: [100, 'max'] as Array<number | 'max'>,
      watchS: 6,
      probes: [1, 10, 50],
      probeMs: 2000,
      passS: 5,
      identity: { identities: 100, durationS: 20, ttlS: 10 },
    };

const log = (msg: string) => process.stderr.write(`bench ${new Date().toISOString().slice(11, 19)} ${msg}\n`);
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

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
  for (const q of P.listQueries) {
    await run(q, 'direct (gzip)', f.server, true, apiPids);
    await run(q, 'direct (identity)', f.server, false, apiPids);
    const wire = await run(q, 'proxy', proxy.url, true, [proxy.pid]);
    if (q === 'all-rv0') {
      const file = join(mkdtempSync(join(tmpdir(), 'kcp-bench-')), 'list.json');
      const plain = await probeResponse(proxy.url + queryPath(q), clientHeaders(token, false));
      writeFileSync(file, plain.body);
      const ceiling = await startCeiling(file);
      try {
        await run(q, 'ceiling', ceiling.url, true, [ceiling.child.pid!]);
      } finally {
        ceiling.child.kill('SIGKILL');
        rmSync(dirname(file), { recursive: true, force: true });
      }
      void wire;
    }
  }
  return rows;
}

async function startCeiling(file: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn('taskset', ['-c', PROXY_CPU, process.execPath, here('./ceiling-server.ts'), file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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
      here('./watch-worker.ts'),
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
        const r = await watchRun(
          up,
          pods,
          { url, headers, watchers: n, stalled: 0 },
          rate,
          P.watchS * 1000,
          loadCpu(target),
          pids,
        );
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
    const r = await watchRun(
      up,
      pods,
      { url, headers: clientHeaders(f.tokens.admin, true), watchers: 99, stalled: 1 },
      100,
      // Long enough for the stalled watch to overflow the proxy's 1,000-event buffer plus socket buffers.
      (quick ? 5 : 25) * 1000,
      loadCpu(target),
      pids,
    );
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
              '--sync-timeout=300s',
            ],
            {
              maxBuffer: 256 * MiB,
              timeout: 400_000,
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
      let proxy: ProxyProcess | undefined;
      let synced: number[];
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
        synced = await runProbes(f.bin.probe, kc, n, loadCpu(target));
      } finally {
        await proxy?.stop();
      }
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
      ['-c', PROXY_CPU, process.execPath, here('./sync-run.ts'), kubeconfig, ns, mode, resource],
      { maxBuffer: 16 * MiB, timeout: 900_000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`sync-run ${mode}: ${err.message} ${stderr.slice(-1000)}`));
        resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '{}'));
      },
    );
  });
}

async function coldScenario(f: Fixture, cmNamespace: string | undefined) {
  const rows = [];
  const measure = async (resource: string, objects: number, jsonBytes: number, baseRss: number) => {
    const p = await startProxy({
      kubeconfig: f.kubeconfigs.adminToken,
      resources: [resource],
      cpu: PROXY_CPU,
    });
    const peak = peakRssBytes(p.pid);
    await new Promise((r) => setTimeout(r, 2000));
    const settled = rssBytes(p.pid);
    await p.stop();
    const perObj = objects > 0 ? (settled - baseRss) / objects : 0;
    return {
      what: `proxy ${resource} (watch-list)`,
      objects,
      readyMs: p.readyMs,
      peakRssMiB: round(peak / MiB),
      rssMiB: round(settled / MiB),
      rssPerObjectBytes: Math.round(perObj),
      jsonPerObjectBytes: objects > 0 ? Math.round(jsonBytes / objects) : 0,
      rssPerJsonByte: objects > 0 ? round(perObj / (jsonBytes / objects), 2) : 0,
    };
  };
  const base = await startProxy({
    kubeconfig: f.kubeconfigs.adminToken,
    resources: ['limitranges'],
    cpu: PROXY_CPU,
  });
  await new Promise((r) => setTimeout(r, 2000));
  const baseRss = rssBytes(base.pid);
  rows.push({
    what: 'proxy, empty cache (limitranges)',
    objects: 0,
    readyMs: base.readyMs,
    peakRssMiB: round(peakRssBytes(base.pid) / MiB),
    rssMiB: round(baseRss / MiB),
    rssPerObjectBytes: 0,
    jsonPerObjectBytes: 0,
    rssPerJsonByte: 0,
  });
  await base.stop();
  const listBytes = async (path: string) =>
    (await probeResponse(f.server + path, clientHeaders(f.tokens.admin, false))).bytes;
  rows.push(await measure('pods', P.data.pods, await listBytes('/api/v1/pods?resourceVersion=0'), baseRss));
  if (cmNamespace)
    rows.push(
      await measure(
        'configmaps',
        P.configMaps,
        await listBytes(`/api/v1/namespaces/${cmNamespace}/configmaps?resourceVersion=0`),
        baseRss,
      ),
    );
  log(`cold: ${JSON.stringify(rows)}`);
  const reflector = [];
  const sets: Array<[string, string, number]> = [['pods', '-', P.data.pods]];
  if (cmNamespace) sets.push(['configmaps', cmNamespace, P.configMaps]);
  for (const [resource, ns] of sets) {
    for (const mode of ['watch-list', 'list']) {
      const r = await syncRun(f.kubeconfigs.adminToken, ns, mode, resource);
      reflector.push({ resource, ...r });
      log(`reflector ${resource} ${mode}: ${JSON.stringify(r)}`);
    }
  }
  return { proxy: rows, reflector };
}

async function passthroughScenario(f: Fixture, up: Upstream, proxy: ProxyProcess) {
  const auth = await up.authorization();
  const cm = await request(`${up.baseUrl}/api/v1/namespaces/${nsName(0)}/configmaps`, {
    method: 'POST',
    dispatcher: up.dispatcher,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify({ metadata: { name: 'bench-passthrough' }, data: { a: 'b' } }),
  });
  await cm.body.dump();
  const rows = [];
  for (const [op, path] of [
    ['GET configmap (uncached)', `/api/v1/namespaces/${nsName(0)}/configmaps/bench-passthrough`],
    ['PATCH pod', `/api/v1/namespaces/${nsName(0)}/pods/${podName(0)}`],
  ] as const) {
    for (const target of ['direct', 'proxy']) {
      const base = target === 'direct' ? f.server : proxy.url;
      const patch = op.startsWith('PATCH');
      const headers = {
        ...clientHeaders(f.tokens.admin, true),
        ...(patch ? { 'content-type': 'application/merge-patch+json' } : {}),
      };
      const r = await runLoad(
        {
          url: base + path,
          connections: 1,
          durationS: P.passS,
          headers,
          method: patch ? 'PATCH' : 'GET',
          ...(patch ? { patchAnnotation: 'bench.kcp/n' } : {}),
        },
        // The apiserver does the work on both paths: keep CPU 0 to it; the proxy hop shares CPU 1 with the client.
        PROXY_CPU,
      );
      rows.push({ op, target, ...r });
      log(`passthrough ${op} ${target}: ${round(r.rps)} req/s p50 ${r.p50Ms} p99 ${r.p99Ms}`);
    }
  }
  return rows;
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
        'kube-apiserver + etcd + orchestrator (seeding, watch writer); load generator for PROXY/CEILING runs',
      [`CPU ${PROXY_CPU}`]:
        'kube-cache-proxy, ceiling server, reflector sync runs; load generator for DIRECT runs',
    },
    dataset: { ...P.data, configMaps: P.configMaps },
    durations: {
      listS: P.listS,
      connections: P.connections,
      watchS: P.watchS,
      passS: P.passS,
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
  let proxy: ProxyProcess | undefined;
  try {
    const meta = versions(f);
    const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
    let t = performance.now();
    await seedPods(up, P.data);
    const seedPodsS = round((performance.now() - t) / 1000);
    log(`seeded ${P.data.pods} pods in ${seedPodsS} s`);
    let cmNamespace: string | undefined;
    let seedCmS = 0;
    if (P.configMaps > 0) {
      t = performance.now();
      cmNamespace = await f.newNamespace('bench-cm');
      await seedConfigMaps(up, cmNamespace, P.configMaps, { bytes: 1024, concurrency: 32 });
      seedCmS = round((performance.now() - t) / 1000);
      log(`seeded ${P.configMaps} configmaps in ${seedCmS} s`);
    }
    const pods = Array.from(
      { length: Math.min(P.data.pods, 500) },
      (_, i) => `${nsName(i % P.data.namespaces)}/${podName(i)}`,
    );
    proxy = await startProxy({ kubeconfig: f.kubeconfigs.adminToken, resources: ['pods'], cpu: PROXY_CPU });
    log(`proxy ready in ${proxy.readyMs} ms (${proxy.url})`);
    const list = await listScenario(f, proxy, apiPids);
    const watch = await watchScenario(f, up, proxy, apiPids, pods);
    const slow = await slowConsumerScenario(f, up, proxy, apiPids, pods);
    const passthrough = await passthroughScenario(f, up, proxy);
    const proxyPeakRssMiB = round(peakRssBytes(proxy.pid) / MiB);
    await proxy.stop();
    proxy = undefined;
    const proxyKubeconfig = (url: string) =>
      writeKubeconfig(join(work, `proxy-${url.split(':').pop()}.kubeconfig`), {
        server: url,
        user: { token: f.tokens.admin },
      });
    const identity = await identityScenario(
      f,
      up,
      { ...P.identity, connections: P.connections, proxyCpu: PROXY_CPU, loadCpu },
      log,
    );
    const upstream = await upstreamScenario(f, up, apiPids, proxyKubeconfig);
    const cold = await coldScenario(f, cmNamespace);
    await up.close();
    // On its own fixture that runs pods (the main one is idle from here on).
    const streams = await streamsScenario(
      quick ? STREAMS_QUICK : STREAMS_FULL,
      { apiserver: APISERVER_CPU, proxy: PROXY_CPU },
      log,
    );
    const results = {
      meta: {
        ...meta,
        seedPodsS,
        seedCmS,
        proxyPeakRssMiB,
        totalS: round((performance.now() - t0) / 1000),
        loadavgAtEnd: loadavg().map((x) => round(x, 2)),
      },
      list,
      watch,
      slowConsumer: slow,
      upstream,
      cold,
      passthrough,
      identity,
      streams,
    };
    const name = quick ? 'quick' : 'latest';
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, `${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
    const md = renderMarkdown(results, `${name}.svg`);
    writeFileSync(join(outDir, `${name}.md`), md);
    writeFileSync(join(outDir, `${name}.svg`), renderSvg(results));
    if (!quick && outIdx < 0) updateDocs(results, md, `${name}.svg`);
    log(`done in ${results.meta.totalS} s → ${join(outDir, `${name}.json`)}`);
    process.stdout.write(md);
  } finally {
    await proxy?.stop();
    await f.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
