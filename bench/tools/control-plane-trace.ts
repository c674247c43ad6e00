/**
 * One side of the control-plane comparison (test/support/control-plane/side.ts) with everything
 * that explains a slow step written to a directory: the apiserver's audit log (every request at
 * Metadata level, JSON: who, what, when received and answered), the proxy's per-request debug log
 * (`--log-level=debug`: served_from, reason, ms), kube-controller-manager's and kube-scheduler's
 * logs (with `--vmodule` for the ReplicaSet, Deployment and StatefulSet controllers, the scheduler
 * at `-v=2`: its bindings), and `steps.json` (each step's wall-clock start and end).
 *   node bench/tools/control-plane-trace.ts --mode direct|auto|list|auto-pb --out DIR [--steps a,b]
 * The timestamps of all of them are wall-clock (UTC), so the logs can be read side by side.
 */
import { copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { PROXY_MODES, type ProxyModeName, proxyMode } from '../../test/support/control-plane/proxy-modes.ts';
import { runSide, type Via } from '../../test/support/control-plane/side.ts';
import { STEPS } from '../../test/support/control-plane/workload.ts';

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
const steps = STEPS.filter((s) => stepNames.split(',').includes(s.name));
await mkdir(out, { recursive: true });

const policy = join(out, 'audit-policy.yaml');
await writeFile(
  policy,
  'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n- level: Metadata\n',
);
const marks: { what: string; at: string }[] = [];
const mark = (what: string) => marks.push({ what, at: new Date().toISOString() });
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
    started: () => {
      mark('leases-held');
      return Promise.resolve();
    },
    finished: async (f, proxy) => {
      mark('finished');
      for (const name of await readdir(f.dir))
        if (name.endsWith('.log')) await copyFile(join(f.dir, name), join(out, name));
      if (proxy) await writeFile(join(out, 'proxy.log'), proxy.stdout());
    },
  },
  onStep: (name) => {
    mark(`step ${name}`);
  },
});
await writeFile(join(out, 'steps.json'), JSON.stringify({ mode, marks, times: result.times }, null, 1));
process.stdout.write(
  `${JSON.stringify({ mode, times: result.times, staleReads: result.staleReads, load: loadavg() })}\n`,
);
