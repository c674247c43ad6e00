/**
 * The fixture's controller-runtime manager (test/apiserver/crmanager/main.go) as a child process:
 * a typed PodDisruptionBudget watch and a metadata-only NetworkPolicy watch, each behind a
 * controller, with controller-runtime's default client config. Its stdin drives it: `dump()`
 * asks for the caches' current contents, `stop()` closes stdin (the manager prints them a last
 * time and exits 0).
 */
import { spawn } from 'node:child_process';

/** The kinds the manager caches: typed and metadata-only. */
export type CrKind = 'PodDisruptionBudget' | 'NetworkPolicy';

/** One `namespace/name@resourceVersion` of a cache. */
export interface CrItem {
  key: string;
  rv: string;
}

/** One line the manager prints. */
export type CrLine =
  | { type: 'synced'; elapsedMs: number }
  | {
      type: 'ADDED' | 'MODIFIED' | 'DELETED';
      kind: CrKind;
      key: string;
      rv: string;
      initial?: boolean;
      tombstone?: boolean;
    }
  | { type: 'reconcile'; kind: CrKind; key: string; rv: string }
  | { type: 'store'; kind: CrKind; items: CrItem[]; count: number }
  | { type: 'dumped' };

/** The caches' contents, by kind, sorted by key. */
export type CrStores = Record<CrKind, CrItem[]>;

/** Options of {@link startCrManager}. */
export interface CrManagerOptions {
  kubeconfig: string;
  /** The namespaces its cache is restricted to (controller-runtime `cache.Options.DefaultNamespaces`). */
  namespaces: string[];
  /** No event and reconcile lines. */
  quiet?: boolean;
  /** Extra environment, e.g. `KUBE_FEATURE_WatchListClient`. */
  env?: NodeJS.ProcessEnv;
}

/** A running manager. */
export interface CrManager {
  /** Resolves at the `synced` line (every informer of its cache synced). */
  synced: Promise<void>;
  /** The caches now (a `dump` line on stdin). */
  dump(): Promise<CrStores>;
  /** Closes stdin; resolves to the final caches at a clean exit, rejects on a non-zero one. */
  stop(): Promise<CrStores>;
  /** Event and reconcile lines so far. */
  lines(): Extract<CrLine, { key: string }>[];
  /** Everything written to stderr so far (controller-runtime's zap and client-go's klog lines). */
  stderr(): string;
  /** Kills the process (SIGKILL) if it still runs; for `finally` blocks. */
  kill(): void;
}

/** Starts the manager binary `bin` (the fixture's `bin.crmanager`); killed after 5 minutes. */
export function startCrManager(bin: string, o: CrManagerOptions): CrManager {
  const args = [`--kubeconfig=${o.kubeconfig}`, `--namespaces=${o.namespaces.join(',')}`];
  if (o.quiet) args.push('--quiet');
  const child = spawn(bin, args, {
    env: { ...process.env, ...o.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    timeout: 300_000,
  });
  let stderr = '';
  const lines: Extract<CrLine, { key: string }>[] = [];
  let onSynced: () => void = () => {};
  let onExitEarly: (e: Error) => void = () => {};
  const synced = new Promise<void>((res, rej) => {
    onSynced = res;
    onExitEarly = rej;
  });
  synced.catch(() => {});
  let current: Partial<CrStores> = {};
  const waiters: { resolve: (s: CrStores) => void; reject: (e: Error) => void }[] = [];
  let last: CrStores | undefined;
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let i = buf.indexOf('\n');
    while (i >= 0) {
      const text = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      i = buf.indexOf('\n');
      if (!text) continue;
      const l = JSON.parse(text) as CrLine;
      if (l.type === 'synced') onSynced();
      else if (l.type === 'store') current[l.kind] = l.items;
      else if (l.type === 'dumped') {
        last = {
          PodDisruptionBudget: current.PodDisruptionBudget ?? [],
          NetworkPolicy: current.NetworkPolicy ?? [],
        };
        current = {};
        waiters.shift()?.resolve(last);
      } else lines.push(l);
    }
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<CrStores>((resolve, reject) => {
    child.on('close', (code, signal) => {
      if (code === 0 && last) return resolve(last);
      const err = new Error(`crmanager exited ${code ?? signal}: ${stderr.slice(-4000)}`);
      onExitEarly(err);
      for (const w of waiters.splice(0)) w.reject(err);
      reject(err);
    });
  });
  exited.catch(() => {});
  return {
    synced,
    dump: () =>
      new Promise<CrStores>((resolve, reject) => {
        if (child.exitCode !== null) return reject(new Error(`crmanager exited ${child.exitCode}`));
        waiters.push({ resolve, reject });
        child.stdin.write('dump\n');
      }),
    stop: () => {
      child.stdin.end();
      return exited;
    },
    lines: () => lines,
    stderr: () => stderr,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
