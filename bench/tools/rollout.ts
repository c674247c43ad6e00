/**
 * The rollout row: the node-local bench's node proxies (bench/scenarios/node-local.ts: K nodes,
 * their pods, every Service and EndpointSlice, one proxy per node with the node-local DaemonSet's
 * flags, A agents per node) restarted one after another as a DaemonSet rollout does
 * (`maxUnavailable: 1`: SIGTERM, a new process with the same flags on the same port, the next
 * node once it is ready), while the agents stay connected and the writes go on. COLD: proxies
 * memory only; WARM: each with its own `--snapshot-dir` (the overlay's hostPath, one per node).
 * The agents resume as client-go's reflector (bench/workers/agent-worker.ts `resume`): a watch
 * that ends is re-opened from its last resourceVersion, a 410 is a relist.
 *
 * Per rollout, from the first SIGTERM to `--settle-s` after the last new proxy is ready:
 * - upstream bytes (apiserver → proxies, a counting relay, wire bytes), and the same above the
 *   steady rate: the mean of two windows of `--steady-s` with the same proxies, agents and writes,
 *   one just before the rollout and one just after it (each window's rate is kept: their
 *   difference is the noise the "above steady" figures carry);
 * - the apiserver's LISTs and LIST response bytes by resource (`apiserver_request_total`,
 *   `apiserver_response_sizes_sum`), its TokenReviews and SubjectAccessReviews;
 * - the apiserver's CPU seconds (utime+stime from /proc, the clock of its
 *   `process_cpu_seconds_total`), and above its steady rate;
 * - the agents' relists (410s) and re-watches, and from the new proxies' /metrics: their relists
 *   by reason, their upstream requests, the client requests they passed upstream and why, and
 *   their snapshot loads.
 *
 * Starts a private fixture (kube-apiserver + etcd pinned to CPU 0, everything else to CPU 1).
 * Every row goes to `--out` (JSON) after each rollout; then Markdown tables (also from a saved
 * file: `--render FILE`); `--docs` writes them as the `rollout` block of docs/benchmarks.md.
 *   node bench/tools/rollout.ts [--nodes 20] [--pods-per-node 50] [--agents 3] [--services 1000]
 *     [--slices 1000] [--rate 10] [--runs 2] [--modes cold,warm] [--steady-s 15] [--settle-s 10]
 *     [--grace-s 30] [--built] [--out FILE] [--render FILE] [--docs]
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { createUpstream } from '../../src/upstream/connection.ts';
import { startFixture, writeKubeconfig } from '../../test/fixture/index.ts';
import { peopleFlags } from '../../test/fixture/proxy-flags.ts';
import { metricSum, parsePrometheus } from '../../test/support/prometheus-text.ts';
import { replaceMarkedBlock } from '../report/report.ts';
import { type RolloutDoc, type RolloutRow, renderRollout } from '../report/rollout-report.ts';
import {
  type Agents,
  agentPaths,
  agentTokens,
  call,
  NODE_LOCAL_FULL,
  NS,
  nlNode,
  seed,
  startAgents,
  writeFor,
} from '../scenarios/node-local.ts';
import { toolArgs } from '../support/args.ts';
import { startByteRelay } from '../support/byte-relay.ts';
import { benchLog } from '../support/log.ts';
import { cpuSeconds, pin, round } from '../support/proc.ts';
import { buildDist, type ProxyProcess, startProxy } from '../support/proxy-process.ts';

const a = toolArgs({
  numbers: {
    nodes: NODE_LOCAL_FULL.nodes,
    'pods-per-node': NODE_LOCAL_FULL.podsPerNode,
    agents: NODE_LOCAL_FULL.agentsPerNode,
    services: NODE_LOCAL_FULL.services,
    slices: NODE_LOCAL_FULL.endpointSlices,
    rate: NODE_LOCAL_FULL.writesPerS,
    runs: 2,
    'steady-s': 15,
    'settle-s': 10,
    'grace-s': 30,
  },
  strings: { modes: 'cold,warm', out: undefined, render: undefined, 'proxy-log': undefined },
  flags: ['built', 'docs'],
});

const docsFile = fileURLToPath(new URL('../../docs/benchmarks.md', import.meta.url));
/** Prints the tables of `doc`; with `--docs`, also as the `rollout` block of docs/benchmarks.md. */
function publish(doc: RolloutDoc): void {
  const md = renderRollout(doc);
  console.log(md);
  if (a.docs) replaceMarkedBlock(docsFile, 'rollout', md);
}

if (a.render) {
  publish(JSON.parse(await readFile(a.render, 'utf8')) as RolloutDoc);
  process.exit(0);
}

const MODES = (a.modes ?? 'cold,warm').split(',') as Array<'cold' | 'warm'>;
const RESOURCES = ['pods', 'services', 'endpointslices'] as const;
const p = {
  ...NODE_LOCAL_FULL,
  nodes: a.nodes,
  podsPerNode: a['pods-per-node'],
  agentsPerNode: a.agents,
  services: a.services,
  endpointSlices: a.slices,
  writesPerS: a.rate,
};
const log = benchLog;
// The bundle the image runs (`--built`), else src/cli.ts under type stripping.
const cli = a.built ? buildDist() : undefined;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

pin(process.pid, '1');
const f = await startFixture({ verbose: false });
for (const pid of Object.values(f.pids())) pin(pid, '0');
const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
const work = await mkdtemp(join(tmpdir(), 'kcp-rollout-'));
const nodes = Array.from({ length: p.nodes }, (_, i) => nlNode(i));
const t0 = performance.now();
await seed(up, NS, nodes, p.podsPerNode, p.services, p.endpointSlices);
const tokens = await agentTokens(up, p.agentsPerNode);
log(`rollout: seeded in ${round((performance.now() - t0) / 1000)} s`);

const relay = await startByteRelay('127.0.0.1', Number(new URL(f.server).port));
const kubeconfig = await writeKubeconfig(join(work, 'relay.kubeconfig'), {
  server: `https://127.0.0.1:${relay.port}`,
  caFile: f.caFile,
  user: { token: f.tokens.admin },
});
// The node-local DaemonSet's serving flags: TLS, client certificates, --delegated-auth, --host-network.
const delegated = [...peopleFlags(f), '--host-network'];

let writes = 0;
let writing = true;
// A failed write is logged and the writer goes on (the rows count the writes that succeeded).
const writer = (async () => {
  while (writing)
    writes += await writeFor(up, p, 1000).catch(async (e: Error) => {
      log(`writer: ${e.message}`);
      await sleep(1000);
      return 0;
    });
})();

/**
 * What the apiserver counted so far (its /metrics): LISTs, LIST response bytes and watch event
 * bytes (`apiserver_watch_events_sizes_sum`, counted as sent: a watch-list's initial events too)
 * by resource, TokenReviews and SubjectAccessReviews; its CPU seconds; the relay's bytes.
 */
async function apiserverNow() {
  const m = await call(up, 'GET', '/metrics');
  if (m.status !== 200) throw new Error(`apiserver /metrics: ${m.status}`);
  const per = (name: string, labels: Record<string, string>) =>
    Object.fromEntries(
      RESOURCES.map((resource) => [resource, metricSum(m.text, name, { ...labels, resource })]),
    );
  return {
    lists: per('apiserver_request_total', { verb: 'LIST' }),
    listBytes: per('apiserver_response_sizes_sum', { verb: 'LIST' }),
    watchEventBytes: per('apiserver_watch_events_sizes_sum', {}),
    tokenReviews: metricSum(m.text, 'apiserver_request_total', { resource: 'tokenreviews', verb: 'POST' }),
    sars: metricSum(m.text, 'apiserver_request_total', { resource: 'subjectaccessreviews', verb: 'POST' }),
    cpuS: cpuSeconds(f.pids().apiserver),
    bytes: relay.bytes().down,
    writes,
    t: performance.now(),
  };
}
type Snap = Awaited<ReturnType<typeof apiserverNow>>;
/** Per second over the windows `from[0]`→`from[1]`, `from[2]`→`from[3]` …: CPU cores, relay bytes, watch event bytes. */
function rates(...from: Snap[]): { cores: number; bytes: number; watchEventBytes: number } {
  let s = 0;
  const r = { cores: 0, bytes: 0, watchEventBytes: 0 };
  for (let i = 0; i + 1 < from.length; i += 2) {
    const [x, y] = [from[i]!, from[i + 1]!];
    s += (y.t - x.t) / 1000;
    r.cores += y.cpuS - x.cpuS;
    r.bytes += y.bytes - x.bytes;
    r.watchEventBytes += sum(y.watchEventBytes) - sum(x.watchEventBytes);
  }
  return { cores: r.cores / s, bytes: r.bytes / s, watchEventBytes: r.watchEventBytes / s };
}
const sub = (x: Record<string, number>, y: Record<string, number>) =>
  Object.fromEntries(Object.keys(x).map((k) => [k, Math.round(x[k]! - (y[k] ?? 0))]));
const sum = (x: Record<string, number>) => Object.values(x).reduce((s, v) => s + v, 0);

/** The counters of the new proxies' /metrics that say what a restart cost, summed over them. */
async function proxyCounters(proxies: ProxyProcess[]): Promise<RolloutRow['proxies']> {
  const out: RolloutRow['proxies'] = {
    relists: {},
    upstreamRequests: {},
    passedUpstream: {},
    snapshotLoads: {},
  };
  const add = (m: Record<string, number>, k: string, v: number) => {
    if (v > 0) m[k] = (m[k] ?? 0) + v;
  };
  for (const x of proxies) {
    const text = await (await request(`${x.opsUrl}/metrics`)).body.text();
    for (const s of parsePrometheus(text)) {
      const l = s.labels;
      if (s.name === 'kube_cache_proxy_reflector_relists_total')
        add(out.relists, `${l.resource} ${l.reason}`, s.value);
      else if (s.name === 'kube_cache_proxy_upstream_requests_total')
        add(out.upstreamRequests, `${l.verb} ${l.resource || '<other>'} ${l.code}`, s.value);
      else if (s.name === 'kube_cache_proxy_requests_total' && l.served_from === 'upstream')
        add(out.passedUpstream, `${l.verb} ${l.resource} ${l.reason}`, s.value);
      else if (s.name === 'kube_cache_proxy_snapshot_loads_total')
        add(out.snapshotLoads, `${l.resource} ${l.result}`, s.value);
    }
  }
  return out;
}

const rows: RolloutRow[] = [];
/** The results so far (rendered as saved: the docs block matches the file). */
const docOf = (): RolloutDoc => ({
  date: new Date().toISOString(),
  kubeApiserver: f.version,
  params: { ...p, runs: a.runs, steadyS: a['steady-s'], settleS: a['settle-s'], graceS: a['grace-s'] },
  cli: cli ? 'dist/kube-cache-proxy.js' : 'src/cli.ts',
  rows,
});
let saved: RolloutDoc | undefined;
/** Keeps the rows so far, and writes them to `--out` (after each rollout: a run cut short keeps its rows). */
async function save(): Promise<void> {
  saved = docOf();
  if (a.out) await writeFile(a.out, `${JSON.stringify(saved, null, 2)}\n`);
}

try {
  for (let run = 1; run <= a.runs; run++) {
    for (const mode of MODES) {
      const dir = await mkdtemp(join(work, `${mode}-${run}-`));
      const args = (i: number, port?: number) => [
        ...delegated,
        ...(port ? [`--listen=127.0.0.1:${port}`] : []),
        ...(mode === 'warm' ? [`--snapshot-dir=${join(dir, nodes[i]!)}`] : []),
      ];
      const start = (i: number, port?: number) =>
        startProxy({
          kubeconfig,
          resources: [
            `pods[fieldSelector=spec.nodeName=${nodes[i]}]`,
            'services',
            'endpointslices.discovery.k8s.io',
          ],
          ...(cli ? { cli } : {}),
          cpu: '1',
          extraArgs: args(i, port),
          ...(a['proxy-log'] ? { logFile: a['proxy-log'] } : {}),
        });
      const proxies: ProxyProcess[] = [];
      const agents: Agents[] = [];
      try {
        for (let i = 0; i < nodes.length; i++) proxies.push(await start(i));
        const ports = proxies.map((x) => Number(new URL(x.url).port));
        for (const [i, node] of nodes.entries()) {
          const paths = agentPaths(node);
          agents.push(
            startAgents(
              {
                base: proxies[i]!.url,
                agents: tokens.map((token) => ({ token, paths })),
                staggerMs: p.staggerMs,
                resume: true,
              },
              '1',
            ),
          );
        }
        await Promise.all(agents.map((x) => x.ready));
        log(`run ${run} ${mode}: ${nodes.length} node proxies and their agents synced`);
        const s0 = await apiserverNow();
        await sleep(a['steady-s'] * 1000);
        const s1 = await apiserverNow();
        const load0 = loadavg()[0]!;
        const restartMs: number[] = [];
        const shutdownMs: number[] = [];
        for (let i = 0; i < nodes.length; i++) {
          const t = performance.now();
          await proxies[i]!.stop(a['grace-s'] * 1000);
          shutdownMs.push(proxies[i]!.ended()?.ms ?? 0);
          proxies[i] = await start(i, ports[i]);
          restartMs.push(Math.round(performance.now() - t));
        }
        await sleep(a['settle-s'] * 1000);
        const r1: Snap = await apiserverNow();
        const proxyStats = await proxyCounters(proxies);
        await sleep(a['steady-s'] * 1000);
        const s2 = await apiserverNow();
        const before = rates(s0, s1);
        const after = rates(r1, s2);
        // The mean rate over both windows.
        const steady = rates(s0, s1, r1, s2);
        const results = await Promise.all(agents.map((x) => x.stop()));
        agents.length = 0;
        const durationS = (r1.t - s1.t) / 1000;
        const errors = results.flatMap((x) => x.errors);
        const row: RolloutRow = {
          run,
          mode,
          rolloutS: round(durationS, 1),
          restartMs,
          shutdownMs,
          upstreamBytes: r1.bytes - s1.bytes,
          upstreamBytesAboveSteady: Math.round(r1.bytes - s1.bytes - steady.bytes * durationS),
          steadyBytesPerS: [Math.round(before.bytes), Math.round(after.bytes)],
          apiserverLists: sub(r1.lists, s1.lists),
          apiserverListBytes: sub(r1.listBytes, s1.listBytes),
          apiserverWatchEventBytes: sub(r1.watchEventBytes, s1.watchEventBytes),
          apiserverWatchEventBytesAboveSteady: Math.round(
            sum(r1.watchEventBytes) - sum(s1.watchEventBytes) - steady.watchEventBytes * durationS,
          ),
          steadyWatchEventBytesPerS: [Math.round(before.watchEventBytes), Math.round(after.watchEventBytes)],
          tokenReviews: r1.tokenReviews - s1.tokenReviews,
          subjectAccessReviews: r1.sars - s1.sars,
          apiserverCpuS: round(r1.cpuS - s1.cpuS, 2),
          apiserverCpuAboveSteadyS: round(r1.cpuS - s1.cpuS - steady.cores * durationS, 2),
          steadyApiserverCores: [round(before.cores, 3), round(after.cores, 3)],
          writesDuring: r1.writes - s1.writes,
          agentWatches: nodes.length * p.agentsPerNode * RESOURCES.length,
          agentRelists: results.reduce((n, x) => n + x.relists, 0),
          agentRewatches: results.reduce((n, x) => n + x.rewatches, 0),
          agentRetries: results.reduce((n, x) => n + x.retries, 0),
          agentErrors: errors.length,
          proxies: proxyStats,
          load1: [round(load0, 1), round(loadavg()[0]!, 1)],
        };
        log(
          `run ${run} ${mode}: ${round(durationS)} s, ${row.upstreamBytes} upstream bytes, LISTs ${JSON.stringify(row.apiserverLists)} (${sum(row.apiserverListBytes)} bytes), apiserver CPU ${row.apiserverCpuS} s, agent relists ${row.agentRelists}/${row.agentWatches}`,
        );
        if (errors.length) log(`run ${run} ${mode}: agent errors: ${errors.slice(0, 3).join(' | ')}`);
        rows.push(row);
        await save();
      } finally {
        await Promise.all(agents.map((x) => x.stop().catch(() => undefined)));
        await Promise.all(proxies.map((x) => x.stop()));
      }
    }
  }
} finally {
  writing = false;
  await writer;
  await relay.close();
  await up.close().catch(() => {});
  await f.stop();
  await rm(work, { recursive: true, force: true });
}
publish(saved ?? docOf());
process.exit(0);
