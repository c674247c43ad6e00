/**
 * The pass-through rows of bench/run.ts (requests the proxy does not cache, forwarded upstream):
 * an uncached GET and a PATCH, DIRECT (client → apiserver), PROXY (client → kube-cache-proxy →
 * apiserver) and KUBECTL PROXY (client → `kubectl proxy`, a plain Go reverse proxy → apiserver)
 * as the reference for what one Go hop costs.
 *
 * Fairness: kube-apiserver + etcd alone on their core (the orchestrator moves off it for these
 * rows); the load generator, kube-cache-proxy and `kubectl proxy` all on the other core, the load
 * generator pinned the same way for every target. `reps` interleaved repetitions
 * (direct, proxy, kubectl proxy, direct, …) so drift in the machine's load hits every target alike;
 * each summary row gives the median req/s and latency over the repetitions and the median and
 * range of the per-repetition ratio to DIRECT. {@link passthroughRows} is the scenario as
 * bench/run.ts runs it; bench/tools/profile-passthrough.ts runs {@link passthroughScenario} alone.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Dispatcher } from 'undici';
import { request } from 'undici';
import type { Upstream } from '../../src/upstream/connection.ts';
import type { Fixture } from '../../test/fixture/index.ts';
import type { PassthroughRow } from '../report/results.ts';
import { APISERVER_CPU, type BenchContext, PROXY_CPU } from '../support/context.ts';
import { clientHeaders, type LoadResult, runLoad } from '../support/load.ts';
import { pin, round } from '../support/proc.ts';
import type { ProxyProcess } from '../support/proxy-process.ts';
import type { RowFailures } from '../support/rows.ts';
import { nsName, podName } from '../support/seed.ts';

/** One load run of one repetition. */
export interface PassthroughRun extends LoadResult {
  op: string;
  target: string;
  rep: number;
}

/** Median of `xs` (NaN when empty). */
export function median(xs: number[]): number {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Summarises interleaved runs per (op, target) against the DIRECT run of the same repetition. */
export function summarisePassthrough(runs: PassthroughRun[], connections: number): PassthroughRow[] {
  const rows: PassthroughRow[] = [];
  const keys = [...new Set(runs.map((r) => `${r.op}\u0000${r.target}`))];
  for (const key of keys) {
    const [op, target] = key.split('\u0000') as [string, string];
    const mine = runs.filter((r) => r.op === op && r.target === target);
    const pairs = mine
      .map((r) => ({ r, d: runs.find((x) => x.op === op && x.target === 'direct' && x.rep === r.rep) }))
      .filter((p) => p.d && p.d.rps > 0);
    const ratios = pairs.map((p) => p.r.rps / p.d!.rps);
    const rps = mine.map((r) => r.rps);
    rows.push({
      op,
      target,
      connections,
      reps: mine.length,
      rps: round(median(rps)),
      rpsMin: round(Math.min(...rps)),
      rpsMax: round(Math.max(...rps)),
      p50Ms: round(median(mine.map((r) => r.p50Ms)), 2),
      p99Ms: round(median(mine.map((r) => r.p99Ms)), 2),
      ratio: round(median(ratios), 2),
      ratioMin: round(Math.min(...ratios), 2),
      ratioMax: round(Math.max(...ratios), 2),
      p99DeltaMs: round(median(pairs.map((p) => p.r.p99Ms - p.d!.p99Ms)), 2),
      non2xx: mine.reduce((s, r) => s + r.non2xx + r.errors, 0),
    });
  }
  return rows;
}

/** A running `kubectl proxy`. */
export interface KubectlProxy {
  url: string;
  pid: number;
  stop(): void;
}

/**
 * Starts `kubectl proxy` on an ephemeral loopback port, pinned to `cpu`, with the credentials of
 * `kubeconfig`. It filters on the Host header (default `--accept-hosts` `^127\.0\.0\.1$`, …):
 * clients send `Host: 127.0.0.1`.
 */
export async function startKubectlProxy(bin: string, kubeconfig: string, cpu: string): Promise<KubectlProxy> {
  const child: ChildProcess = spawn(
    'taskset',
    ['-c', cpu, bin, 'proxy', `--kubeconfig=${kubeconfig}`, '--address=127.0.0.1', '--port=0'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let tail = '';
  child.stderr!.on('data', (d: Buffer) => {
    tail = (tail + d.toString()).slice(-2000);
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      // "Starting to serve on 127.0.0.1:41235"
      const m = /Starting to serve on ([\d.]+:\d+)/.exec(out);
      if (m) resolve(`http://${m[1]}`);
    });
    child.once('exit', (c) => reject(new Error(`kubectl proxy exited ${c}: ${tail}`)));
    setTimeout(() => reject(new Error(`kubectl proxy did not start in 30 s: ${tail}`)), 30_000).unref();
  });
  return { url, pid: child.pid!, stop: () => child.kill('SIGKILL') };
}

/** What the pass-through scenario needs from the run. */
export interface PassthroughEnv {
  apiserverUrl: string;
  proxyUrl: string;
  kubectlProxyUrl: string | undefined;
  token: string;
  upstream: { baseUrl: string; dispatcher: Dispatcher; authorization(): Promise<string | undefined> };
  configMapPath: string;
  podPath: string;
  cpu: string;
  connections: number;
  durationS: number;
  reps: number;
  log: (msg: string) => void;
  failures: RowFailures;
}

/** Runs the interleaved repetitions; returns every run and the per-(op, target) summary. */
export async function passthroughScenario(
  e: PassthroughEnv,
): Promise<{ runs: PassthroughRun[]; rows: PassthroughRow[] }> {
  const auth = await e.upstream.authorization();
  const ns = e.configMapPath.split('/')[4];
  const cm = await request(`${e.upstream.baseUrl}/api/v1/namespaces/${ns}/configmaps`, {
    method: 'POST',
    dispatcher: e.upstream.dispatcher,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify({ metadata: { name: e.configMapPath.split('/').pop() }, data: { a: 'b' } }),
  });
  await cm.body.dump();
  const targets: Array<[string, string]> = [
    ['direct', e.apiserverUrl],
    ['proxy', e.proxyUrl],
    ...(e.kubectlProxyUrl ? [['kubectl proxy', e.kubectlProxyUrl] as [string, string]] : []),
  ];
  const runs: PassthroughRun[] = [];
  for (const [op, path] of [
    ['GET configmap (uncached)', e.configMapPath],
    ['PATCH pod', e.podPath],
  ] as const) {
    const patch = op.startsWith('PATCH');
    for (let rep = 1; rep <= e.reps; rep++) {
      for (const [target, base] of targets) {
        const headers: Record<string, string> = {
          ...clientHeaders(e.token, true),
          ...(patch ? { 'content-type': 'application/merge-patch+json' } : {}),
          ...(target === 'kubectl proxy' ? { host: '127.0.0.1' } : {}),
        };
        const r = await e.failures.attempt('pass-through', `${op} ${target} #${rep}`, () =>
          runLoad(
            {
              url: base + path,
              connections: e.connections,
              durationS: e.durationS,
              headers,
              method: patch ? 'PATCH' : 'GET',
              ...(patch ? { patchAnnotation: 'bench.kcp/n' } : {}),
            },
            e.cpu,
          ),
        );
        if (!r) continue;
        runs.push({ op, target, rep, ...r });
        e.log(`passthrough ${op} ${target} #${rep}: ${round(r.rps)} req/s p50 ${r.p50Ms} p99 ${r.p99Ms}`);
      }
    }
  }
  return { runs, rows: summarisePassthrough(runs, e.connections) };
}

/**
 * The pass-through rows as bench/run.ts runs them on its fixture, with `kubectl proxy` as the Go
 * peer: starts `kubectl proxy`, moves this process off the apiserver's core for the rows, and
 * runs {@link passthroughScenario} with the run's sizes.
 */
export async function passthroughRows(
  { P, failures, log }: BenchContext,
  f: Fixture,
  up: Upstream,
  proxy: ProxyProcess,
) {
  const kp = await failures.attempt('pass-through', 'start kubectl proxy', () =>
    startKubectlProxy(f.bin.kubectl, f.kubeconfigs.adminToken, PROXY_CPU),
  );
  // kube-apiserver + etcd alone on their core for these rows.
  pin(process.pid, PROXY_CPU);
  try {
    return await passthroughScenario({
      apiserverUrl: f.server,
      proxyUrl: proxy.url,
      kubectlProxyUrl: kp?.url,
      token: f.tokens.admin,
      upstream: up,
      configMapPath: `/api/v1/namespaces/${nsName(0)}/configmaps/bench-passthrough`,
      podPath: `/api/v1/namespaces/${nsName(0)}/pods/${podName(0)}`,
      cpu: PROXY_CPU,
      connections: P.passConnections,
      durationS: P.passS,
      reps: P.passReps,
      log,
      failures,
    });
  } finally {
    pin(process.pid, APISERVER_CPU);
    kp?.stop();
  }
}
