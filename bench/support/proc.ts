/**
 * /proc sampling and CPU pinning for the benchmark: CPU seconds (utime+stime of all threads,
 * /proc/PID/stat fields 14–15 in clock ticks), RSS and peak RSS (VmRSS / VmHWM of
 * /proc/PID/status, bytes), and `taskset` pinning of a running process and all its threads.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // getconf CLK_TCK on Linux x86_64/arm64

/** CPU time (user + system, all threads) of `pid`, seconds; 0 if the process is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the `(comm)` that may contain spaces: state is field 3, utime 14, stime 15.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/**
 * Time `pid`'s live threads spent runnable but waiting for a CPU (seconds): the sum of the second
 * field of `/proc/PID/task/TID/schedstat` (ns; needs schedstats, on by default). On a machine
 * shared by more runnable threads than cores this is the delay the scheduler adds to every
 * wake-up (a request arriving, an answer coming back); threads that already ended are not
 * counted. 0 if the process is gone.
 */
export function runQueueWaitSeconds(pid: number): number {
  let ns = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
      } catch {
        // The thread ended meanwhile.
      }
    }
  } catch {
    return 0;
  }
  return ns / 1e9;
}

function statusField(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Resident set size of `pid`, bytes (0 if gone). */
export const rssBytes = (pid: number): number => statusField(pid, 'VmRSS');
/** Peak resident set size of `pid` since it started, bytes (0 if gone). */
export const peakRssBytes = (pid: number): number => statusField(pid, 'VmHWM');

/** Pins `pid` and all its threads to `cpus` (e.g. `"0"`), via `taskset -a -p -c`. */
export function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** A CPU meter over a time window: cores used (CPU seconds / wall seconds) by each pid. */
export function cpuMeter(pids: number[]): () => number {
  const t0 = performance.now();
  const c0 = pids.reduce((s, p) => s + cpuSeconds(p), 0);
  return () => {
    const wall = (performance.now() - t0) / 1000;
    const c = pids.reduce((s, p) => s + cpuSeconds(p), 0) - c0;
    return wall > 0 ? round(c / wall, 3) : 0;
  };
}

/** Rounds to `digits` decimals. */
export function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
