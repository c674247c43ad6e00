/**
 * `npm run bench [-- --quick] [-- --out DIR]`: kube-cache-proxy side by side with the real
 * kube-apiserver (test/fixture), one scenario after the other in one run (issue 6). Writes
 * DIR/latest.json (quick: quick.json), a Markdown report and an SVG chart (default DIR
 * bench/results); a full run also refreshes docs/benchmarks.md and the README's headline.
 *
 * This file is the orchestrator: it starts the fixture, seeds it, starts the proxy and runs the
 * scenarios of bench/scenarios/ in order (list, watch, slow-consumer, passthrough, identity,
 * upstream, cold, node-local, streams), then writes the results (bench/report/). The sizes of a
 * full and a quick run and the CPU layout are in bench/support/context.ts.
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
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createUpstream, type Upstream } from '../src/upstream/connection.ts';
import { type Fixture, startFixture, writeKubeconfig } from '../test/fixture/index.ts';
import { renderMarkdown, renderSvg, updateDocs } from './report/report.ts';
import type { BenchResults } from './report/results.ts';
import { coldScenario } from './scenarios/cold.ts';
import { identityScenario } from './scenarios/identity.ts';
import { listScenario } from './scenarios/list.ts';
import { NODE_LOCAL_FULL, NODE_LOCAL_QUICK, nodeLocalScenario } from './scenarios/node-local.ts';
import { type PassthroughRun, passthroughRows } from './scenarios/passthrough.ts';
import { slowConsumerScenario } from './scenarios/slow-consumer.ts';
import { STREAMS_FULL, STREAMS_QUICK, streamsScenario } from './scenarios/streams.ts';
import { upstreamScenario } from './scenarios/upstream.ts';
import { watchScenario } from './scenarios/watch.ts';
import {
  APISERVER_CPU,
  BENCH_FULL,
  BENCH_QUICK,
  type BenchContext,
  loadCpu,
  MiB,
  PROXY_CPU,
} from './support/context.ts';
import { benchLog } from './support/log.ts';
import { seedWidgets } from './support/memory.ts';
import { peakRssBytes, pin, round } from './support/proc.ts';
import { startProxy } from './support/proxy-process.ts';
import { RowFailures } from './support/rows.ts';
import { nsName, podName, seedPods } from './support/seed.ts';
import { seedConfigMaps } from './support/sync-support.ts';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const outIdx = argv.indexOf('--out');
const outDir = outIdx >= 0 ? argv[outIdx + 1]! : fileURLToPath(new URL('./results/', import.meta.url));
const P = quick ? BENCH_QUICK : BENCH_FULL;

const log = benchLog;
const failures = new RowFailures(log);
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const ctx: BenchContext = { P, quick, failures, log };

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
        r.list = await listScenario(ctx, f, proxy, apiPids);
        r.watch = await watchScenario(ctx, f, u, proxy, apiPids, pods);
        r.slowConsumer = await slowConsumerScenario(ctx, f, u, proxy, apiPids, pods);
        const pt = await passthroughRows(ctx, f, u, proxy);
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
    r.upstream = await upstreamScenario(ctx, f, u, apiPids, proxyKubeconfig);
    r.cold = await coldScenario(ctx, f, u, ns, (cli) => {
      memoryCli = cli;
    });
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
