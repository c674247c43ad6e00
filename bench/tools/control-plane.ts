/**
 * The control-plane rows: kube-controller-manager (every default controller) and kube-scheduler
 * of a fresh pods fixture in the control-plane shape, talking to the apiserver DIRECTLY and
 * through ONE kube-cache-proxy (sidecar mode, `--resources=auto` (`auto`), the same with
 * `--protobuf-answers=json` (`auto-json`: protobuf answers off) and/or the list of test/support/control-plane/proxy-modes.ts
 * (`list`)), then the scripted
 * workload (test/support/control-plane/workload.ts). Per side and phase (start-up: from the
 * components' start until both Leases are held, the proxy's caches synced and the apiserver's open
 * watches steady; workload: the steps): the apiserver's open watches at the
 * phase's end (`apiserver_longrunning_requests{verb="WATCH"}`), its LIST requests
 * (`apiserver_request_total`), the WATCH requests started (`apiserver_request_total` counts a watch
 * when it ends: those that ended plus the growth of the open ones), the bytes it sent (LIST response bytes, `apiserver_response_sizes_sum`,
 * plus watch event bytes, `apiserver_watch_events_sizes_sum`), the apiserver's (and etcd's) CPU seconds, the
 * components' CPU seconds and the proxy's; with the ratio proxy / direct. Each side runs
 * `--runs` times (default 2); the table gives the mean and the min–max spread.
 *   node bench/tools/control-plane.ts [--runs 2] [--modes direct,auto,list,auto-json] [--steps a,b]
 * Prints one JSON line per run, then a Markdown table (and the load average at start and end).
 */
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { Agent, request } from 'undici';
import type { Fixture } from '../../test/fixture/index.ts';
import { compareStates, type FinalState } from '../../test/support/control-plane/final-state.ts';
import { PROXY_MODES, type ProxyModeName, proxyMode } from '../../test/support/control-plane/proxy-modes.ts';
import { upstreamSince } from '../../test/support/control-plane/proxy-reads.ts';
import { runSide, type Via } from '../../test/support/control-plane/side.ts';
import { STEPS } from '../../test/support/control-plane/workload.ts';
import { metricSum } from '../../test/support/prometheus-text.ts';
import type { CliProxy } from '../../test/support/proxy.ts';
import { cpuSeconds, round } from '../support/proc.ts';

const argv = process.argv.slice(2);
const opt = (name: string, d: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? (argv[i + 1] ?? d) : d;
};
const RUNS = Number(opt('runs', '2'));
const MODES = opt('modes', 'direct,auto').split(',');
for (const m of MODES)
  if (m !== 'direct' && !PROXY_MODES.includes(m as ProxyModeName))
    throw new Error(`--modes: unknown mode "${m}" (want direct, ${PROXY_MODES.join(', ')})`);
const STEP_NAMES = opt('steps', '');
const steps = STEP_NAMES ? STEPS.filter((s) => STEP_NAMES.split(',').includes(s.name)) : STEPS;
const log = (m: string) => process.stderr.write(`${m}\n`);

/** Counters of one instant. */
interface Sample {
  watchesOpen: number;
  lists: number;
  watches: number;
  listBytes: number;
  watchEventBytes: number;
  apiserverCpu: number;
  componentsCpu: number;
  proxyCpu: number;
}

/** Reads the apiserver's counters (as its admin) and the processes' CPU. */
async function sample(f: Fixture, componentPids: number[], proxyPid: number | undefined): Promise<Sample> {
  const agent = new Agent({
    connect: { ca: f.caPem, cert: await readFile(f.adminCert.cert), key: await readFile(f.adminCert.key) },
  });
  try {
    const r = await request(`${f.server}/metrics`, { dispatcher: agent });
    const text = await r.body.text();
    if (r.statusCode !== 200) throw new Error(`apiserver /metrics: ${r.statusCode}`);
    return {
      watchesOpen: metricSum(text, 'apiserver_longrunning_requests', { verb: 'WATCH' }),
      lists: metricSum(text, 'apiserver_request_total', { verb: 'LIST' }),
      watches: metricSum(text, 'apiserver_request_total', { verb: 'WATCH' }),
      listBytes: metricSum(text, 'apiserver_response_sizes_sum', { verb: 'LIST' }),
      watchEventBytes: metricSum(text, 'apiserver_watch_events_sizes_sum', {}),
      apiserverCpu: cpuSeconds(f.pids().apiserver) + cpuSeconds(f.pids().etcd),
      componentsCpu: componentPids.reduce((s, p) => s + cpuSeconds(p), 0),
      proxyCpu: proxyPid ? cpuSeconds(proxyPid) : 0,
    };
  } finally {
    await agent.close();
  }
}

/**
 * Start-up is over when both Leases are held (the caller waited for that), every cache of the proxy
 * is synced and the apiserver's open watches did not change over 5 samples 1 s apart: through the
 * proxy the components' informers start after the Lease, their first watches pass upstream while
 * the on-demand caches start and are handed over at sync, so the Leases alone end start-up early.
 * Returns the last sample.
 */
async function settled(f: Fixture, pids: number[], proxy: CliProxy | undefined): Promise<Sample> {
  const open: number[] = [];
  const deadline = Date.now() + 300_000;
  for (;;) {
    const s = await sample(f, pids, proxy?.child.pid);
    open.push(s.watchesOpen);
    const synced = proxy
      ? (
          (await fetch(`${proxy.ops}/debug/cache`).then((r) => r.json())) as {
            resources: { synced: boolean }[];
          }
        ).resources.every((r) => r.synced)
      : true;
    const last = open.slice(-5);
    if ((synced && last.length === 5 && last.every((x) => x === last[0])) || Date.now() > deadline) return s;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** One phase's figures: deltas of the counters, the open watches at its end. */
type Phase = Sample;
const delta = (a: Sample, b: Sample): Phase => ({
  watchesOpen: b.watchesOpen,
  lists: b.lists - a.lists,
  // apiserver_request_total counts a WATCH when it ends: the watches started in the phase are
  // those that ended in it plus the growth of the open ones.
  watches: b.watches - a.watches + (b.watchesOpen - a.watchesOpen),
  listBytes: b.listBytes - a.listBytes,
  watchEventBytes: b.watchEventBytes - a.watchEventBytes,
  apiserverCpu: round(b.apiserverCpu - a.apiserverCpu, 2),
  componentsCpu: round(b.componentsCpu - a.componentsCpu, 2),
  proxyCpu: round(b.proxyCpu - a.proxyCpu, 2),
});

interface Run {
  mode: string;
  startup: Phase;
  workload: Phase;
  startupMs: number;
  workloadMs: number;
  load: number[];
}

const runs: Run[] = [];
let firstDirect: FinalState | undefined;
const loadStart = loadavg();
for (let i = 0; i < RUNS; i++) {
  for (const mode of MODES) {
    const via: Via =
      mode === 'direct' ? { kind: 'direct' } : { kind: 'proxy', ...proxyMode(mode as ProxyModeName) };
    log(`control-plane bench: run ${i + 1}/${RUNS}, ${mode}`);
    let s0: Sample | undefined;
    let s1: Sample | undefined;
    let s2: Sample | undefined;
    let t0 = 0;
    let t1 = 0;
    let t2 = 0;
    const compPids = (f: { components: { name: string; pid: number }[] }) =>
      f.components.filter((c) => c.name !== 'kwok').map((c) => c.pid);
    const result = await runSide(via, {
      steps,
      hooks: {
        beforeComponents: async (f, proxy) => {
          s0 = await sample(f, [], proxy?.child.pid);
          t0 = performance.now();
        },
        started: async (f, proxy) => {
          s1 = await settled(f, compPids(f), proxy);
          t1 = performance.now();
        },
        finished: async (f, proxy) => {
          s2 = await sample(f, compPids(f), proxy?.child.pid);
          t2 = performance.now();
        },
      },
    });
    // The checks of test/e2e/control-plane.test.ts, reported here rather than asserted.
    firstDirect ??= mode === 'direct' ? result.state : undefined;
    const after = result.proxy?.steady?.reads;
    const checks = {
      stateDiffersFromDirect: firstDirect
        ? compareStates(firstDirect, result.state).map((d) => d.kind)
        : 'no direct run yet',
      exited: result.exited,
      leasesKept: JSON.stringify(result.leases.start) === JSON.stringify(result.leases.end),
      leadershipLogLines: result.leadershipLogLines.length,
      ...(result.proxy
        ? {
            proxyExited: result.proxy.exitedEarly,
            // With the keys and RVs that differed: the resource name alone cannot tell a stale
            // cache from a comparison at two revisions.
            cacheMismatches: result.proxy.mismatches,
            caches: result.proxy.cached.length,
            openCacheWatchers: result.proxy.reads.openCacheWatchers,
            upstreamReads: result.proxy.reads.upstream,
            upstreamInSteadyState: after
              ? upstreamSince(after, result.proxy.reads)
              : 'no steady state reached',
          }
        : {}),
    };
    const run: Run = {
      mode,
      startup: delta(s0!, s1!),
      workload: delta(s1!, s2!),
      startupMs: Math.round(t1 - t0),
      workloadMs: Math.round(t2 - t1),
      load: loadavg().map((x) => round(x, 1)),
    };
    runs.push(run);
    process.stdout.write(`${JSON.stringify({ ...run, times: result.times, checks })}\n`);
  }
}

const fields: [keyof Phase, string][] = [
  ['watchesOpen', 'apiserver watches open at the end'],
  ['lists', 'LIST requests'],
  ['watches', 'WATCH requests started'],
  ['listBytes', 'LIST bytes'],
  ['watchEventBytes', 'watch event bytes'],
  ['apiserverCpu', 'apiserver + etcd CPU s'],
  ['componentsCpu', 'KCM + scheduler CPU s'],
  ['proxyCpu', 'proxy CPU s'],
];
const stat = (xs: number[]) => {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return { mean, text: `${round(mean, 2)} (${round(Math.min(...xs), 2)}–${round(Math.max(...xs), 2)})` };
};
const lines = [
  `| phase | row | ${MODES.join(' | ')} | ${MODES.filter((m) => m !== 'direct')
    .map((m) => `${m} / direct`)
    .join(' | ')} |`,
];
lines.push(`|${' --- |'.repeat(2 + MODES.length + MODES.filter((m) => m !== 'direct').length)}`);
for (const phase of ['startup', 'workload'] as const) {
  for (const [key, label] of fields) {
    const per = MODES.map((m) => stat(runs.filter((r) => r.mode === m).map((r) => r[phase][key])));
    const d = per[MODES.indexOf('direct')]?.mean ?? 0;
    const ratios = MODES.flatMap((m, i) =>
      m === 'direct' ? [] : [d ? `${round(per[i]!.mean / d, 2)}` : '–'],
    );
    lines.push(`| ${phase} | ${label} | ${per.map((p) => p.text).join(' | ')} | ${ratios.join(' | ')} |`);
  }
  const ms = MODES.map((m) =>
    stat(
      runs.filter((r) => r.mode === m).map((r) => (phase === 'startup' ? r.startupMs : r.workloadMs) / 1000),
    ),
  );
  const d = ms[MODES.indexOf('direct')]?.mean ?? 0;
  lines.push(
    `| ${phase} | wall s | ${ms.map((p) => p.text).join(' | ')} | ${MODES.flatMap((m, i) => (m === 'direct' ? [] : [d ? `${round(ms[i]!.mean / d, 2)}` : '–'])).join(' | ')} |`,
  );
}
process.stdout.write(
  `\n${lines.join('\n')}\n\nload average at start ${loadStart.map((x) => round(x, 1)).join(' ')}, at end ${loadavg()
    .map((x) => round(x, 1))
    .join(' ')}\n`,
);
