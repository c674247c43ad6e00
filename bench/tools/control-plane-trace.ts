/**
 * One side of the control-plane comparison (test/support/control-plane/side.ts) with everything
 * that explains a slow step written to a directory: the apiserver's audit log (every request at
 * Metadata level, JSON: who, what, when received and answered), the proxy's per-request debug log
 * (`--log-level=debug`: served_from, reason, ms), kube-controller-manager's and kube-scheduler's
 * logs (with `--vmodule` for the ReplicaSet, Deployment and StatefulSet controllers, the scheduler
 * at `-v=2`: its bindings), and `steps.json` (each step's wall-clock start and end, and each
 * process's CPU seconds and run-queue wait seconds — runnable, waiting for a core — at each
 * step's start and at the end: on the shared machine, what a hop through one more process costs).
 *   node bench/tools/control-plane-trace.ts --mode direct|auto|list|auto-json --out DIR [--steps a,b]
 *     [--barrier DIR [--barrier-of 2]]
 * With `--barrier`, runs started at the same time (one per mode) begin their steps together.
 * The timestamps of all of them are wall-clock (UTC), so the logs can be read side by side.
 */
import { copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import type { PodsFixture } from '../../test/fixture/pods-fixture.ts';
import { PROXY_MODES, type ProxyModeName, proxyMode } from '../../test/support/control-plane/proxy-modes.ts';
import { runSide, type Via } from '../../test/support/control-plane/side.ts';
import { STEPS } from '../../test/support/control-plane/workload.ts';
import type { CliProxy } from '../../test/support/proxy.ts';
import { cpuSeconds, round, runQueueWaitSeconds } from '../support/proc.ts';

const argv = process.argv.slice(2);
const opt = (name: string, d: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? (argv[i + 1] ?? d) : d;
};
const mode = opt('mode', 'auto');
if (mode !== 'direct' && !PROXY_MODES.includes(mode as ProxyModeName))
  throw new Error(`--mode: unknown mode "${mode}" (want direct, ${PROXY_MODES.join(', ')})`);
const out = resolve(opt('out', ''));
if (!opt('out', '')) throw new Error('--out: give a directory for the logs');
const stepNames = opt('steps', 'deployment-create-scale-50');
const barrier = opt('barrier', '');
const barrierOf = Number(opt('barrier-of', '2'));
const steps = STEPS.filter((s) => stepNames.split(',').includes(s.name));
await mkdir(out, { recursive: true });

const policy = join(out, 'audit-policy.yaml');
await writeFile(
  policy,
  'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n- level: Metadata\n',
);
const marks: { what: string; at: string }[] = [];
/** Per process: CPU seconds and run-queue wait seconds, at each step's start and at the end. */
const samples: { at: string; procs: Record<string, { cpu: number; wait: number }> }[] = [];
let procs: Record<string, number> = {};
const sample = (at: string) => {
  const out: Record<string, { cpu: number; wait: number }> = {};
  for (const [name, pid] of Object.entries(procs))
    out[name] = { cpu: round(cpuSeconds(pid), 2), wait: round(runQueueWaitSeconds(pid), 3) };
  samples.push({ at, procs: out });
};
const remember = (f: PodsFixture, proxy: CliProxy | undefined) => {
  procs = {
    apiserver: f.pids().apiserver,
    etcd: f.pids().etcd,
    ...Object.fromEntries(f.components.map((c) => [c.name, c.pid])),
    ...(proxy?.child.pid ? { proxy: proxy.child.pid } : {}),
  };
};
const mark = (what: string) => marks.push({ what, at: new Date().toISOString() });
/**
 * Waits until `n` runs wrote their ready file into `dir` (this one's included): runs started
 * together (`--barrier DIR`) begin their steps at the same moment, so they share the machine's
 * load — on the shared machine the load average moves from 20 to 45 within minutes, and one
 * side measured minutes after the other compares two loads, not two servers.
 */
async function meet(dir: string, n: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, `${process.pid}.ready`), '');
  const deadline = Date.now() + 600_000;
  while ((await readdir(dir)).filter((x) => x.endsWith('.ready')).length < n) {
    if (Date.now() > deadline) throw new Error(`--barrier ${dir}: ${n} runs not ready within 10 min`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const via: Via =
  mode === 'direct'
    ? { kind: 'direct' }
    : {
        kind: 'proxy',
        ...proxyMode(mode as ProxyModeName),
        args: [...proxyMode(mode as ProxyModeName).args, '--log-level=debug'],
      };
const result = await runSide(via, {
  steps,
  fixture: {
    apiserverFlags: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${join(out, 'audit.log')}`,
      '--audit-log-format=json',
      '--audit-log-mode=batch',
      '--audit-log-batch-max-wait=1s',
    ],
    componentFlags: {
      kcm: ['--vmodule=replica_set=4,deployment_controller=4,sync=4,stateful_set=4,controller_utils=4'],
      scheduler: ['--v=2'],
    },
  },
  hooks: {
    beforeComponents: () => {
      mark('components-start');
      return Promise.resolve();
    },
    started: async (f, proxy) => {
      mark('leases-held');
      remember(f, proxy);
      if (barrier) await meet(barrier, barrierOf);
      mark('barrier-passed');
    },
    finished: async (f, proxy) => {
      mark('finished');
      sample('finished');
      for (const name of await readdir(f.dir))
        if (name.endsWith('.log')) await copyFile(join(f.dir, name), join(out, name));
      if (proxy) await writeFile(join(out, 'proxy.log'), proxy.stdout());
    },
  },
  onStep: (name) => {
    mark(`step ${name}`);
    sample(`step ${name}`);
  },
});
await writeFile(
  join(out, 'steps.json'),
  JSON.stringify({ mode, marks, samples, times: result.times }, null, 1),
);
/** Each process's CPU and run-queue wait over the steps run (first sample to the end), seconds. */
const first = samples[0]?.procs ?? {};
const last = samples.at(-1)?.procs ?? {};
const during = Object.fromEntries(
  Object.entries(last).map(([name, x]) => [
    name,
    { cpu: round(x.cpu - (first[name]?.cpu ?? 0), 2), wait: round(x.wait - (first[name]?.wait ?? 0), 3) },
  ]),
);
process.stdout.write(
  `${JSON.stringify({ mode, times: result.times, staleReads: result.staleReads, during, load: loadavg() })}\n`,
);
