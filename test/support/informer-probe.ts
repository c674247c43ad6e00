/**
 * The fixture's client-go informer probe as a child process whose `synced` line is observable
 * while it runs (`runProbe` only resolves at exit), so a test can start writing once every
 * informer has synced. Output format: test/fixture/probe.ts `ProbeLine`.
 */
import { spawn } from 'node:child_process';
import { type ProbeLine, type ProbeOptions, type ProbeResult, probeInvocation } from '../fixture/index.ts';

/** A running probe. */
export interface ProbeProcess {
  /** Resolves at the probe's `synced` line. */
  synced: Promise<void>;
  /** Resolves at a clean exit with everything it printed; rejects on a non-zero exit. */
  done: Promise<ProbeResult>;
  /** Everything the probe wrote to stderr so far (client-go's klog lines: `W…`/`E…` for watch and list errors). */
  stderr(): string;
  /** The event lines printed so far (none with `quiet`). */
  events(): ProbeResult['events'];
  /** Ends a probe started with `untilStopped`: it prints its store and exits (see `done`). */
  stop(): void;
  /** The probe's process id (its CPU time in /proc, for the bench). */
  pid: number;
}

/** Starts the probe binary `bin` (see `runProbe` for the options). */
export function startProbe(bin: string, o: ProbeOptions): ProbeProcess {
  const { args, env } = probeInvocation(o);
  const child = spawn(bin, args, { env, stdio: ['pipe', 'pipe', 'pipe'], timeout: o.timeoutMs ?? 300_000 });
  if (!o.untilStopped) child.stdin.end();
  const result: ProbeResult = { events: [], store: [], syncedMs: -1 };
  let onSynced: () => void = () => {};
  let onSyncFail: (e: Error) => void = () => {};
  const synced = new Promise<void>((res, rej) => {
    onSynced = res;
    onSyncFail = rej;
  });
  let buf = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let i = buf.indexOf('\n');
    while (i >= 0) {
      const text = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      i = buf.indexOf('\n');
      if (!text) continue;
      const l = JSON.parse(text) as ProbeLine;
      if (l.type === 'synced') {
        result.syncedMs = l.elapsedMs;
        onSynced();
      } else if (l.type === 'store') result.store = l.items;
      else result.events.push(l);
    }
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const done = new Promise<ProbeResult>((resolve, reject) => {
    child.on('close', (code, signal) => {
      if (code === 0) return resolve(result);
      const err = new Error(`informer-probe exited ${code ?? signal}: ${stderr}`);
      onSyncFail(err);
      reject(err);
    });
  });
  synced.catch(() => {});
  return {
    synced,
    done,
    stderr: () => stderr,
    events: () => result.events,
    stop: () => child.stdin.end(),
    pid: child.pid ?? 0,
  };
}
