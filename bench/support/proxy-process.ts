/**
 * Starts kube-cache-proxy as its own process (`src/cli.ts` under Node 24 type stripping), pinned
 * with `taskset`, on ephemeral loopback ports, so its CPU and RSS can be read from /proc. Ready =
 * the ops listener's `/readyz` answers 200 (every configured resource synced).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';

const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
/**
 * The built CLI (`npm run build`), what the npm bin and the image run: the entry file of
 * scripts/bundle.ts's bundle (its chunks beside it), no type stripping at run time.
 */
export const DIST_CLI = fileURLToPath(new URL('../../dist/kube-cache-proxy.js', import.meta.url));
/**
 * Builds dist/ as `npm run build` does (tsc, then scripts/bundle.ts), synchronously, with the
 * running Node; throws when either step fails. Returns {@link DIST_CLI}.
 */
export function buildDist(): string {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const opts = { cwd: root, stdio: 'ignore' as const };
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], opts);
  execFileSync(process.execPath, ['scripts/bundle.ts'], opts);
  return DIST_CLI;
}

/** The same CLI as tsc emits it, one module file each (before issue 12's bundle; comparisons). */
export const DIST_MODULES_CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));
const memoryHook = fileURLToPath(new URL('../workers/memory-hook.js', import.meta.url));

/** `process.memoryUsage()` of the proxy (bytes), as bench/workers/memory-hook.js reports it. */
export interface MemoryUsage {
  cmd: string;
  /** True when two forced full collections ran first. */
  gc: boolean;
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** Each V8 heap space's `[used, committed]` bytes (`v8.getHeapSpaceStatistics()`). */
  spaces?: Record<string, [number, number]>;
}

/** A running proxy process. */
export interface ProxyProcess {
  pid: number;
  /** `http://127.0.0.1:PORT` of the Kubernetes API listener. */
  url: string;
  /** `http://127.0.0.1:PORT` of the ops listener. */
  opsUrl: string;
  /** Spawn → `/readyz` 200, ms. */
  readyMs: number;
  /**
   * SIGTERM, then SIGKILL after `graceMs` (default 5 s; a pod's default
   * `terminationGracePeriodSeconds` is 30 s); resolves when the process exited.
   */
  stop(graceMs?: number): Promise<void>;
  /** After {@link stop}: how the process ended (`exit 0`, `SIGKILL` …) and the ms from SIGTERM to its exit. */
  ended(): { how: string; ms: number } | undefined;
  /**
   * Only with `memoryHook`: the proxy's memory now (`sample`), after a forced GC (`gc`), or after
   * a GC and a heap snapshot written to PATH (`snapshot PATH`). Rejects after 120 s.
   */
  memory(cmd: string): Promise<MemoryUsage>;
}

/** Starts the proxy caching `resources` in front of `kubeconfig`, pinned to `cpu`. */
export async function startProxy(opts: {
  kubeconfig: string;
  resources: string[];
  cpu: string;
  readyTimeoutMs?: number;
  extraArgs?: string[];
  /** Preload bench/workers/memory-hook.js with `--expose-gc` (enables {@link ProxyProcess.memory}). */
  memoryHook?: boolean;
  /** The CLI to run; default src/cli.ts (type stripping), {@link DIST_CLI} for the built one. */
  cli?: string;
  /** Node/V8 flags before the CLI; default those of the CLI's shebang ({@link shebangFlags}), what the bin and the image run. */
  nodeArgs?: string[];
  /**
   * Extra environment of the proxy process (e.g. `MALLOC_ARENA_MAX`), over the shebang's
   * assignments ({@link shebangEnv}), which apply only when `nodeArgs` is not given.
   */
  env?: NodeJS.ProcessEnv;
  /** Appends the proxy's stdout and stderr (its log lines) to this file. */
  logFile?: string;
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
      ...(opts.memoryHook ? ['--expose-gc', `--import=${memoryHook}`] : []),
      ...(opts.nodeArgs ?? shebangFlags(opts.cli ?? cli)),
      opts.cli ?? cli,
      `--kubeconfig=${opts.kubeconfig}`,
      `--resources=${opts.resources.join(',')}`,
      '--listen=127.0.0.1:0',
      '--ops-listen=127.0.0.1:0',
      '--log-level=info',
      '--max-watchers=2000',
      '--max-inflight=2000',
      ...(opts.extraArgs ?? []),
    ],
    {
      stdio: [opts.memoryHook ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...(opts.nodeArgs ? {} : shebangEnv(opts.cli ?? cli)), ...opts.env },
    },
  );
  if (opts.logFile) {
    const log = createWriteStream(opts.logFile, { flags: 'a' });
    child.stdout!.on('data', (d: Buffer) => log.write(d));
    child.stderr!.on('data', (d: Buffer) => log.write(d));
    child.once('exit', () => log.end());
  }
  let tail = '';
  const memoryWaiters: Array<(m: MemoryUsage) => void> = [];
  let errBuf = '';
  child.stderr!.on('data', (d: Buffer) => {
    errBuf += d.toString();
    for (let nl = errBuf.indexOf('\n'); nl >= 0; nl = errBuf.indexOf('\n')) {
      const line = errBuf.slice(0, nl);
      errBuf = errBuf.slice(nl + 1);
      if (line.startsWith('KCP_MEMORY ')) memoryWaiters.shift()?.(JSON.parse(line.slice(11)) as MemoryUsage);
    }
  });
  const memory = (cmd: string) =>
    new Promise<MemoryUsage>((resolve, reject) => {
      if (!child.stdin) return reject(new Error('proxy started without memoryHook'));
      const t = setTimeout(() => reject(new Error(`proxy memory ${cmd}: no answer in 120 s`)), 120_000);
      memoryWaiters.push((m) => {
        clearTimeout(t);
        resolve(m);
      });
      child.stdin.write(`${cmd}\n`);
    });
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
  let ended: { how: string; ms: number } | undefined;
  const stop = async (graceMs = 5000) => {
    const t = performance.now();
    await stopChild(child, graceMs);
    ended ??= {
      how: child.signalCode ?? `exit ${child.exitCode}`,
      ms: Math.round(performance.now() - t),
    };
  };
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
    return {
      pid: child.pid!,
      url,
      opsUrl,
      readyMs: Math.round(performance.now() - t0),
      stop,
      ended: () => ended,
      memory,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The Node flags of a CLI file's `#!/usr/bin/env -S [NAME=VALUE…] node FLAGS` line (the image's
 * ENTRYPOINT carries the same: test/unit/repo/image-steps.test.ts); none without such a line.
 */
export function shebangFlags(file: string): string[] {
  return parseShebang(readFileSync(file, 'utf8').split('\n', 1)[0] ?? '').flags;
}

/**
 * The environment a CLI file's shebang sets before `node` (`env -S NAME=VALUE … node`: the
 * malloc settings, which the image's `ENV` carries too); {} without any.
 */
export function shebangEnv(file: string): Record<string, string> {
  return parseShebang(readFileSync(file, 'utf8').split('\n', 1)[0] ?? '').env;
}

/** Splits `#!/usr/bin/env -S [NAME=VALUE…] node FLAGS` into its assignments and Node flags. */
export function parseShebang(line: string): { env: Record<string, string>; flags: string[] } {
  const m = /^#!\/usr\/bin\/env -S (.+)$/.exec(line);
  if (!m) return { env: {}, flags: [] };
  const words = m[1]!.trim().split(/\s+/);
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]!); i++) {
    const eq = words[i]!.indexOf('=');
    env[words[i]!.slice(0, eq)] = words[i]!.slice(eq + 1);
  }
  if (words[i] !== 'node') return { env: {}, flags: [] };
  return { env, flags: words.slice(i + 1) };
}

function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
