/**
 * Profiles the pass-through path alone (issue 12): starts a private fixture, seeds a few pods,
 * starts the proxy (caching pods) with `--cpu-prof`, runs the pass-through rows of bench/run.ts
 * (uncached GET of a ConfigMap, PATCH of a pod; direct, proxy and `kubectl proxy`, pinned as in
 * bench/scenarios/passthrough.ts), then prints the proxy's hottest functions (bench/tools/profile-top.ts).
 *   node bench/tools/profile-passthrough.ts [--reps N] [--seconds S] [--connections C] [--no-prof]
 * Leaves the profile in a temporary directory whose path it prints.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createUpstream } from '../../src/upstream/connection.ts';
import { startFixture } from '../../test/fixture/index.ts';
import { passthroughScenario, startKubectlProxy } from '../scenarios/passthrough.ts';
import { toolArgs } from '../support/args.ts';
import { pin } from '../support/proc.ts';
import { startProxy } from '../support/proxy-process.ts';
import { RowFailures } from '../support/rows.ts';
import { nsName, podName, seedPods } from '../support/seed.ts';

const args = toolArgs({ numbers: { connections: 1, seconds: 2, reps: 3 }, flags: ['no-prof'] });
const log = (m: string) => process.stderr.write(`${m}\n`);
const prof = !args['no-prof'];
const profDir = mkdtempSync(join(tmpdir(), 'kcp-pass-prof-'));
if (prof) process.env.KCP_BENCH_CPU_PROF = profDir;

pin(process.pid, '1');
const f = await startFixture({ verbose: false });
for (const p of Object.values(f.pids())) pin(p, '0');
try {
  const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
  await seedPods(up, { pods: 20, namespaces: 2, nodes: 2, podBytes: 5000 });
  const proxy = await startProxy({ kubeconfig: f.kubeconfigs.adminToken, resources: ['pods'], cpu: '1' });
  const kp = await startKubectlProxy(f.bin.kubectl, f.kubeconfigs.adminToken, '1');
  const failures = new RowFailures(log);
  try {
    const r = await passthroughScenario({
      apiserverUrl: f.server,
      proxyUrl: proxy.url,
      kubectlProxyUrl: kp.url,
      token: f.tokens.admin,
      upstream: up,
      configMapPath: `/api/v1/namespaces/${nsName(0)}/configmaps/bench-passthrough`,
      podPath: `/api/v1/namespaces/${nsName(0)}/pods/${podName(0)}`,
      cpu: '1',
      connections: args.connections,
      durationS: args.seconds,
      reps: args.reps,
      log,
      failures,
    });
    for (const x of r.rows)
      log(
        `${x.op.padEnd(26)} ${x.target.padEnd(14)} ${String(x.rps).padStart(7)} req/s ratio ${x.ratio} (${x.ratioMin}–${x.ratioMax}) p50 ${x.p50Ms} p99 ${x.p99Ms} Δp99 ${x.p99DeltaMs}`,
      );
  } finally {
    kp.stop();
    await proxy.stop();
    await up.close();
  }
} finally {
  await f.stop();
}
if (prof) {
  const file = readdirSync(profDir).find((x) => x.endsWith('.cpuprofile'));
  if (file) {
    log(`profile: ${join(profDir, file)}`);
    process.stdout.write(
      execFileSync(process.execPath, [
        fileURLToPath(new URL('./profile-top.ts', import.meta.url)),
        join(profDir, file),
        '40',
      ]),
    );
  }
}
