/**
 * The upstream-load rows of bench/run.ts: N client-go informers on pods (the fixture's
 * informer-probe, watch-list enabled; N from `P.probes`) started at once, DIRECT against the
 * apiserver and through a fresh PROXY caching pods: the LIST and WATCH requests and bytes the
 * apiserver served (its own `/metrics`, bench/support/apiserver-metrics.ts), upstream MiB,
 * apiserver+etcd CPU seconds, wall time, and the informers' sync time p50/max.
 */
import { execFile } from 'node:child_process';
import type { Upstream } from '../../src/upstream/connection.ts';
import type { Fixture } from '../../test/fixture/index.ts';
import { diffUpstream, upstreamCounters } from '../support/apiserver-metrics.ts';
import { type BenchContext, loadCpu, MiB, PROXY_CPU } from '../support/context.ts';
import { cpuSeconds, round } from '../support/proc.ts';
import { type ProxyProcess, startProxy } from '../support/proxy-process.ts';

/** Starts `n` informer probes at once; resolves with each one's sync time, ms (-1: never synced). */
function runProbes(
  probeMs: number,
  bin: string,
  kubeconfig: string,
  n: number,
  cpu: string,
): Promise<number[]> {
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
              `--duration=${probeMs}ms`,
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

export async function upstreamScenario(
  { P, failures, log }: BenchContext,
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
            return await runProbes(P.probeMs, f.bin.probe, kc, n, loadCpu(target));
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
