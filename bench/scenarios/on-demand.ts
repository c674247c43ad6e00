/**
 * Issue 15, on-demand caches (`--resources=auto`): what the first request of an uncached
 * resource costs, how long until the cache answers, and how much memory an idle eviction gives
 * back. On its own fixture (seeded with {@link OnDemandParams}), side by side with the apiserver:
 *
 *   node bench/scenarios/on-demand.ts [--quick] [--runs N]   # default 2 runs (quick: 1)
 *
 * writes bench/results/on-demand{,-quick}.json and, for a full run, the `on-demand` block of
 * docs/benchmarks.md (the shared ending, bench/report/scenario-end.ts).
 *
 * One run, one fresh proxy (`--resources=auto --auto-idle-timeout=<idleTimeoutS>s`, the built CLI
 * when `cli` is given), for pods then configmaps:
 *  1. the LIST `?resourceVersion=0` of every object direct (the apiserver's own watch cache), then
 *     the same LIST through the proxy: the first one passes upstream and starts the cache; the
 *     proxy is then polled every `pollMs` (a one-namespace LIST plus a scrape of
 *     `kube_cache_proxy_requests_total{verb="LIST",served_from="cache"}`) until a LIST is answered
 *     from the cache: "start" = first LIST sent → that answer received. Then the full LIST once
 *     more, from the cache.
 *  2. VmRSS of the proxy (bench/support/proc.ts; no forced GC: what a process shows): with an empty cache
 *     (before the first request), while both caches are held (after sync, one WATCH open on each),
 *     when both caches were stopped for idleness (`on_demand_caches_total{event="stopped",
 *     reason="idle"}` = 2, polled after the watches closed) and `secondWaitS` later.
 *  3. A client-go informer (test/apiserver/probe, watch-list on) on pods: sync time direct and
 *     through a second fresh auto proxy (its first WATCH starts the cache and passes upstream).
 * CPUs: kube-apiserver + etcd on `cpus.apiserver`, the proxies on `cpus.proxy`, the informer on
 * the core the server under test is not on (as bench/scenarios/upstream.ts's rows).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Agent, request } from 'undici';
import { createUpstream, type Upstream } from '../../src/upstream/connection.ts';
import { type Fixture, startFixture, writeKubeconfig } from '../../test/fixture/index.ts';
import { renderOnDemand } from '../report/on-demand-report.ts';
import type {
  FirstListRow,
  OnDemandParams,
  OnDemandResults,
  OnDemandRun,
  RssPoint,
} from '../report/results.ts';
import { endScenario } from '../report/scenario-end.ts';
import { clientHeaders } from '../support/load.ts';
import { benchLog } from '../support/log.ts';
import { peakRssBytes, pin, round, rssBytes } from '../support/proc.ts';
import { buildDist, DIST_CLI, type ProxyProcess, startProxy } from '../support/proxy-process.ts';
import { RowFailures } from '../support/rows.ts';
import { seedPods } from '../support/seed.ts';
import { seedConfigMaps } from '../support/sync-support.ts';

const MiB = 2 ** 20;
/** The polls' label selector: it selects nothing, so a poll costs little however many objects there are. */
const POLL_SELECTOR = 'labelSelector=bench-poll%3Dnone';
/** The fixture apiserver's serving certificate is self-signed (bench/scenarios/list.ts's probes do the same). */
const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The full run: the pods and configmaps of the issue (5,000 and 2,000). */
export const ON_DEMAND_FULL: OnDemandParams = {
  pods: 5000,
  namespaces: 50,
  nodes: 50,
  podBytes: 5000,
  configMaps: 2000,
  idleTimeoutS: 10,
  pollMs: 20,
  settleS: 2,
  secondWaitS: 30,
  probeMs: 1000,
};

/** `--quick`: small and short (inside the quick bench's budget). */
export const ON_DEMAND_QUICK: OnDemandParams = {
  pods: 500,
  namespaces: 10,
  nodes: 10,
  podBytes: 5000,
  configMaps: 200,
  idleTimeoutS: 3,
  pollMs: 20,
  settleS: 1,
  secondWaitS: 3,
  probeMs: 500,
};

/** Sum of the samples of Prometheus metric `name` whose labels include every `labels` pair. */
export function metricSum(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf('}');
    const set = line.slice(name.length + 1, close);
    if (Object.entries(labels).every(([k, v]) => set.includes(`${k}="${v}"`)))
      sum += Number(line.slice(close + 1).trim());
  }
  return sum;
}

async function scrape(p: ProxyProcess): Promise<string> {
  const res = await request(`${p.opsUrl}/metrics`);
  if (res.statusCode !== 200) throw new Error(`proxy /metrics: ${res.statusCode}`);
  return res.body.text();
}

const cacheLists = async (p: ProxyProcess, resource: string) =>
  metricSum(await scrape(p), 'kube_cache_proxy_requests_total', {
    verb: 'LIST',
    resource,
    served_from: 'cache',
  });

/** One GET with the bench client's headers: status, wall ms, the decoded JSON body's item count and RV. */
async function timedList(url: string, token: string) {
  const t0 = performance.now();
  const res = await request(url, { dispatcher, headers: clientHeaders(token, true) });
  const raw = Buffer.from(await res.body.arrayBuffer());
  const ms = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${raw.toString().slice(0, 300)}`);
  const body = res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
  const list = JSON.parse(body.toString('utf8')) as {
    items: unknown[];
    metadata: { resourceVersion: string };
  };
  return { ms, bytes: raw.length, items: list.items.length, rv: list.metadata.resourceVersion };
}

async function firstList(
  f: Fixture,
  p: ProxyProcess,
  resource: string,
  paths: { all: string; poll: string },
  params: OnDemandParams,
): Promise<FirstListRow & { rv: string }> {
  const token = f.tokens.admin;
  const direct = await timedList(f.server + paths.all, token);
  const t0 = performance.now();
  const first = await timedList(p.url + paths.all, token);
  if (first.items !== direct.items)
    throw new Error(`${resource}: proxy listed ${first.items} objects, direct ${direct.items}`);
  const before = await cacheLists(p, resource);
  if (before !== 0) throw new Error(`${resource}: the first LIST was answered from the cache`);
  let polls = 0;
  let prevEnd = performance.now();
  const deadline = Date.now() + 300_000;
  for (;;) {
    await sleep(params.pollMs);
    await timedList(p.url + paths.poll, token);
    const end = performance.now();
    polls++;
    if ((await cacheLists(p, resource)) > 0) {
      const cached = await timedList(p.url + paths.all, token);
      if ((await cacheLists(p, resource)) < 2)
        throw new Error(`${resource}: the LIST after the sync was not answered from the cache`);
      return {
        resource,
        objects: direct.items,
        responseBytes: direct.bytes,
        directMs: round(direct.ms),
        proxyFirstMs: round(first.ms),
        firstRatio: round(first.ms / direct.ms, 2),
        startS: round((end - t0) / 1000, 2),
        resolutionMs: round(end - prevEnd),
        polls,
        cacheMs: round(cached.ms),
        cacheRatio: round(cached.ms / direct.ms, 2),
        rv: cached.rv,
      };
    }
    prevEnd = performance.now();
    if (Date.now() > deadline) throw new Error(`${resource}: no LIST answered from the cache in 300 s`);
  }
}

/** Opens a WATCH and reads it until `close()`. */
async function openWatch(url: string, token: string): Promise<() => void> {
  const ac = new AbortController();
  const res = await request(url, { headers: clientHeaders(token, false), signal: ac.signal });
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${await res.body.text()}`);
  res.body.on('data', () => {});
  res.body.on('error', () => {});
  return () => ac.abort();
}

function probeSync(bin: string, kubeconfig: string, cpu: string, probeMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      'taskset',
      [
        '-c',
        cpu,
        bin,
        `--kubeconfig=${kubeconfig}`,
        '--resource=pods',
        `--duration=${probeMs}ms`,
        '--quiet',
        '--sync-timeout=300s',
      ],
      {
        maxBuffer: 64 * MiB,
        timeout: 400_000,
        env: { ...process.env, KUBE_FEATURE_WatchListClient: 'true' },
      },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`probe: ${err.message} ${stderr.slice(-500)}`));
        const synced = stdout.split('\n').find((l) => l.includes('"synced"'));
        if (!synced) return reject(new Error(`probe: no "synced" line: ${stderr.slice(-500)}`));
        resolve((JSON.parse(synced) as { elapsedMs: number }).elapsedMs);
      },
    );
  });
}

/** Seeds the dataset: pods (bench/support/seed.ts) and the ConfigMaps in a new namespace. */
export async function seedOnDemand(f: Fixture, up: Upstream, p: OnDemandParams): Promise<void> {
  await seedPods(up, { pods: p.pods, namespaces: p.namespaces, nodes: p.nodes, podBytes: p.podBytes });
  const ns = await f.newNamespace('bench-od');
  await seedConfigMaps(up, ns, p.configMaps, { bytes: 1024, concurrency: 32 });
}

async function oneRun(
  f: Fixture,
  p: OnDemandParams,
  cpus: { apiserver: string; proxy: string },
  work: string,
  cli: string | undefined,
  log: (msg: string) => void,
): Promise<OnDemandRun> {
  const start = (extra: string[] = []) =>
    startProxy({
      kubeconfig: f.kubeconfigs.adminToken,
      resources: ['auto'],
      cpu: cpus.proxy,
      extraArgs: [`--auto-idle-timeout=${p.idleTimeoutS}s`, ...extra],
      ...(cli ? { cli } : {}),
    });
  const rss: RssPoint[] = [];
  const proxy = await start();
  const ready = performance.now();
  const sample = (stage: RssPoint['stage']) => {
    rss.push({
      stage,
      rssMiB: round(rssBytes(proxy.pid) / MiB),
      atS: round((performance.now() - ready) / 1000),
    });
    log(`on-demand rss ${stage}: ${rss.at(-1)!.rssMiB} MiB`);
  };
  const rows: FirstListRow[] = [];
  let evictedAfterS = 0;
  let peakRssMiB = 0;
  try {
    await sleep(p.settleS * 1000);
    sample('empty');
    const sets: Array<[string, { all: string; poll: string }, string]> = [
      [
        'pods',
        { all: '/api/v1/pods?resourceVersion=0', poll: `/api/v1/pods?resourceVersion=0&${POLL_SELECTOR}` },
        '/api/v1/pods',
      ],
      [
        'configmaps',
        {
          all: '/api/v1/configmaps?resourceVersion=0',
          poll: `/api/v1/configmaps?resourceVersion=0&${POLL_SELECTOR}`,
        },
        '/api/v1/configmaps',
      ],
    ];
    const watches: Array<() => void> = [];
    try {
      for (const [resource, paths, watchPath] of sets) {
        const { rv, ...row } = await firstList(f, proxy, resource, paths, p);
        rows.push(row);
        log(`on-demand first LIST ${resource}: ${JSON.stringify(row)}`);
        watches.push(
          await openWatch(`${proxy.url}${watchPath}?watch=1&resourceVersion=${rv}`, f.tokens.admin),
        );
      }
      await sleep(p.settleS * 1000);
      sample('held');
    } finally {
      for (const close of watches) close();
    }
    const closed = performance.now();
    const deadline = Date.now() + (p.idleTimeoutS + 120) * 1000;
    for (;;) {
      const idle = metricSum(await scrape(proxy), 'kube_cache_proxy_on_demand_caches_total', {
        event: 'stopped',
        reason: 'idle',
      });
      if (idle >= sets.length) break;
      if (Date.now() > deadline) throw new Error(`${idle} of ${sets.length} caches stopped as idle`);
      await sleep(100);
    }
    evictedAfterS = round((performance.now() - closed) / 1000);
    sample('evicted');
    await sleep(p.secondWaitS * 1000);
    sample('evicted, later');
    peakRssMiB = round(peakRssBytes(proxy.pid) / MiB);
  } finally {
    await proxy.stop();
  }
  // The informer: direct, then through a second fresh auto proxy.
  const directMs = await probeSync(f.bin.probe, f.kubeconfigs.adminToken, cpus.proxy, p.probeMs);
  const second = await start();
  let proxyMs: number;
  try {
    const kc = await writeKubeconfig(join(work, `auto-${second.pid}.kubeconfig`), {
      server: second.url,
      user: { token: f.tokens.admin },
    });
    proxyMs = await probeSync(f.bin.probe, kc, cpus.apiserver, p.probeMs);
  } finally {
    await second.stop();
  }
  log(`on-demand informer pods: direct ${directMs} ms, auto proxy ${proxyMs} ms`);
  const at = (s: RssPoint['stage']) => rss.find((x) => x.stage === s)!.rssMiB;
  const returned = at('held') - at('evicted, later');
  return {
    firstList: rows,
    rss,
    peakRssMiB,
    evictedAfterS,
    returnedMiB: round(returned),
    returnedFraction: round(returned / (at('held') - at('empty')), 2),
    informer: { directMs, proxyMs, ratio: round(proxyMs / directMs, 2) },
    loadavg: loadavg().map((x) => round(x, 2)),
  };
}

/**
 * Runs the scenario `runs` times on fixture `f` (seeded by {@link seedOnDemand}), each run a fresh proxy. A failed run is recorded in `failures`.
 * `cli`: the proxy CLI to run (bench/support/proxy-process.ts default: src/cli.ts).
 */
export async function onDemandScenario(
  f: Fixture,
  p: OnDemandParams,
  opts: { cpus: { apiserver: string; proxy: string }; runs: number; cli?: string },
  log: (msg: string) => void,
): Promise<OnDemandResults> {
  const failures = new RowFailures(log);
  const out: OnDemandResults = { params: p, runs: [], failures: failures.rows };
  const work = mkdtempSync(join(tmpdir(), 'kcp-bench-od-'));
  try {
    for (let i = 1; i <= opts.runs; i++) {
      const r = await failures.attempt(
        'on-demand',
        `run ${i}`,
        () => oneRun(f, p, opts.cpus, work, opts.cli, log),
        (p.idleTimeoutS + p.secondWaitS + 900) * 1000,
      );
      if (r) out.runs.push(r);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const quick = argv.includes('--quick');
  const i = argv.indexOf('--runs');
  const runs = i >= 0 ? Number(argv[i + 1]) : quick ? 1 : 2;
  const p = quick ? ON_DEMAND_QUICK : ON_DEMAND_FULL;
  const cpus = { apiserver: '0', proxy: '1' };
  const log = benchLog;
  pin(process.pid, cpus.apiserver);
  const t0 = performance.now();
  const loadavgAtStart = loadavg().map((x) => round(x, 2));
  // What the image runs (bench/scenarios/cold.ts's memory rows do the same).
  buildDist();
  const f = await startFixture({ verbose: false });
  for (const pid of [f.pids().apiserver, f.pids().etcd]) pin(pid, cpus.apiserver);
  const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
  let r: OnDemandResults;
  try {
    await seedOnDemand(f, up, p);
    log(`seeded ${p.pods} pods, ${p.configMaps} configmaps in ${round((performance.now() - t0) / 1000)} s`);
    r = await onDemandScenario(f, p, { cpus, runs, cli: DIST_CLI }, log);
  } finally {
    await up.close().catch(() => {});
    await f.stop();
  }
  endScenario({
    name: 'on-demand',
    quick,
    kubeApiserver: f.version,
    t0,
    extra: { loadavgAtStart },
    results: r,
    render: renderOnDemand,
    failed: 'failed runs',
    log,
  });
}

if (import.meta.main) await main();
