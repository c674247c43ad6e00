/**
 * Starts kube-cache-proxy as its own process (`src/cli.ts` under Node 24 type stripping), pinned
 * with `taskset`, on ephemeral loopback ports, so its CPU and RSS can be read from /proc. Ready =
 * the ops listener's `/readyz` answers 200 (every configured resource synced).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));

/** A running proxy process. */
export interface ProxyProcess {
  pid: number;
  /** `http://127.0.0.1:PORT` of the Kubernetes API listener. */
  url: string;
  /** `http://127.0.0.1:PORT` of the ops listener. */
  opsUrl: string;
  /** Spawn → `/readyz` 200, ms. */
  readyMs: number;
  /** SIGTERM, then SIGKILL after 5 s; resolves when the process exited. */
  stop(): Promise<void>;
}

/** Starts the proxy caching `resources` in front of `kubeconfig`, pinned to `cpu`. */
export async function startProxy(opts: {
  kubeconfig: string;
  resources: string[];
  cpu: string;
  readyTimeoutMs?: number;
  extraArgs?: string[];
}): Promise<ProxyProcess> {
  const t0 = performance.now();
  const child = spawn(
    'taskset',
    [
      '-c',
      opts.cpu,
      process.execPath,
      // KCP_BENCH_CPU_PROF=DIR: a V8 CPU profile of every proxy process, written when it exits.
      ...(process.env.KCP_BENCH_CPU_PROF
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.KCP_BENCH_CPU_PROF}`]
        : []),
      cli,
      `--kubeconfig=${opts.kubeconfig}`,
      `--resources=${opts.resources.join(',')}`,
      '--listen=127.0.0.1:0',
      '--ops-listen=127.0.0.1:0',
      '--log-level=info',
      '--max-watchers=2000',
      '--max-inflight=2000',
      ...(opts.extraArgs ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let tail = '';
  const addr = new Promise<{ url: string; opsUrl: string }>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      tail = (tail + d.toString()).slice(-4000);
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.includes('kube-cache-proxy listening')) {
          const j = JSON.parse(line) as { address: string; ops: string };
          resolve({ url: j.address, opsUrl: j.ops });
        }
      }
    });
    child.stderr!.on('data', (d: Buffer) => {
      tail = (tail + d.toString()).slice(-4000);
    });
    child.once('exit', (code) => reject(new Error(`proxy exited ${code} before listening:\n${tail}`)));
  });
  const stop = () => stopChild(child);
  try {
    const { url, opsUrl } = await addr;
    const deadline = Date.now() + (opts.readyTimeoutMs ?? 600_000);
    for (;;) {
      const res = await request(`${opsUrl}/readyz`).catch(() => undefined);
      await res?.body.dump();
      if (res?.statusCode === 200) break;
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`proxy not ready (${res?.statusCode}):\n${tail}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return { pid: child.pid!, url, opsUrl, readyMs: Math.round(performance.now() - t0), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
