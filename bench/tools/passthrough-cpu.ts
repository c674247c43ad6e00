/**
 * CPU per forwarded request (issue 12): what the pass-through hop costs, less noisy on a shared
 * machine than req/s. Starts a private fixture, seeds a few pods, starts one proxy per `--cli`
 * (default: this tree's src/cli.ts; pass another checkout's to compare), each caching pods,
 * pinned to CPU 1 with the load generator (the apiserver + etcd on CPU 0, as in
 * bench/scenarios/passthrough.ts), and runs `--reps` interleaved repetitions of an uncached GET (a
 * ConfigMap), a LIST answered from the pods cache and a PATCH (a pod) through each for `--seconds`: the proxy's user+system CPU
 * (/proc) per request, and req/s. `--watch-only` adds a row of PATCHes sent to the apiserver
 * DIRECTLY, where the proxy's CPU per request is what its pods reflector spends on the watch
 * event each PATCH makes (every PATCH row through the proxy pays it too).
 *   node bench/tools/passthrough-cpu.ts [--cli PATH]… [--reps N] [--seconds S] [--extra-args "…"] [--watch-only]
 */
import { request } from 'undici';
import { createUpstream } from '../../src/upstream/connection.ts';
import { startFixture } from '../../test/fixture/index.ts';
import { median } from '../scenarios/passthrough.ts';
import { toolArgs, words } from '../support/args.ts';
import { clientHeaders, runLoad } from '../support/load.ts';
import { cpuSeconds, pin, round } from '../support/proc.ts';
import { startProxy } from '../support/proxy-process.ts';
import { nsName, podName, seedPods } from '../support/seed.ts';

const args = toolArgs({
  numbers: { reps: 3, seconds: 3 },
  lists: ['cli', 'extra-args'],
  flags: ['watch-only'],
});
const clis = args.cli;
const extraArgs = words(args['extra-args']);
const { reps, seconds } = args;
const log = (m: string) => process.stderr.write(`${m}\n`);

pin(process.pid, '1');
const f = await startFixture({ verbose: false });
for (const p of Object.values(f.pids())) pin(p, '0');
try {
  const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
  await seedPods(up, { pods: 20, namespaces: 2, nodes: 2, podBytes: 5000 });
  const auth = await up.authorization();
  const cm = await request(`${up.baseUrl}/api/v1/namespaces/${nsName(0)}/configmaps`, {
    method: 'POST',
    dispatcher: up.dispatcher,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify({ metadata: { name: 'bench-passthrough' }, data: { a: 'b' } }),
  });
  await cm.body.dump();
  const proxies = [];
  for (const cli of clis.length ? clis : [undefined])
    proxies.push({
      cli: cli ?? 'src/cli.ts',
      p: await startProxy({
        kubeconfig: f.kubeconfigs.adminToken,
        resources: ['pods'],
        cpu: '1',
        ...(cli ? { cli } : {}),
        extraArgs,
      }),
    });
  const results: Record<string, { cpuUs: number[]; rps: number[] }> = {};
  try {
    const podPath = `/api/v1/namespaces/${nsName(0)}/pods/${podName(0)}`;
    for (const [op, path, direct] of [
      ['GET', `/api/v1/namespaces/${nsName(0)}/configmaps/bench-passthrough`, false],
      // A LIST the proxy answers from its pods cache (the serving path, not the pass-through hop).
      ['LIST cached', `/api/v1/namespaces/${nsName(0)}/pods?resourceVersion=0`, false],
      ['PATCH', podPath, false],
      ...(args['watch-only'] ? [['PATCH direct (proxy watches)', podPath, true] as const] : []),
    ] as const) {
      for (let rep = 1; rep <= reps; rep++) {
        for (const { cli, p } of proxies) {
          const c0 = cpuSeconds(p.pid);
          const r = await runLoad(
            {
              url: (direct ? f.server : p.url) + path,
              connections: 1,
              durationS: seconds,
              headers: {
                ...clientHeaders(f.tokens.admin, true),
                ...(op.startsWith('PATCH') ? { 'content-type': 'application/merge-patch+json' } : {}),
              },
              method: op.startsWith('PATCH') ? 'PATCH' : 'GET',
              ...(op.startsWith('PATCH') ? { patchAnnotation: 'bench.kcp/n' } : {}),
            },
            '1',
          );
          const us = ((cpuSeconds(p.pid) - c0) / Math.max(1, r.requests)) * 1e6;
          const k = `${op} ${cli}`;
          results[k] ??= { cpuUs: [], rps: [] };
          results[k].cpuUs.push(round(us, 0));
          results[k].rps.push(round(r.rps));
          log(
            `${k} #${rep}: ${round(r.rps)} req/s, ${round(us, 0)} µs CPU/request (${r.non2xx + r.errors} errors)`,
          );
        }
      }
    }
  } finally {
    for (const { p } of proxies) await p.stop();
    await up.close();
  }
  for (const [k, v] of Object.entries(results))
    process.stdout.write(
      `${k.padEnd(60)} CPU/request median ${median(v.cpuUs)} µs [${v.cpuUs.join(', ')}]; req/s median ${median(v.rps)} [${v.rps.join(', ')}]\n`,
    );
} finally {
  await f.stop();
}
