/**
 * The upstream check ({@link checkUpstream}) run at start and then on a schedule, its last result
 * kept for the `/readyz` check `upstream` (answered from memory: a kubelet probe every few
 * seconds never becomes an apiserver request). Schedule: while failing, again after 1 s, doubling
 * to at most 30 s (and never more than the healthy interval); while passing, every
 * `intervalMs` (`--upstream-check-interval`, default 1 minute) with `/version` only — a token
 * that is revoked or expires fails it with 401 —, the SelfSubjectReview again at each recovery.
 * Logs: the first result and every change (a failure, a different failure, the recovery), one
 * line each; not every retry.
 */
import { type Clock, realClock, type TimerHandle } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { checkUpstream, type UpstreamCheckTarget } from './upstream-check.ts';

/** Options of {@link UpstreamMonitor}. */
export interface UpstreamMonitorOptions {
  target: UpstreamCheckTarget;
  log: Logger;
  /** Re-check cadence while passing (ms); default 60 000. */
  intervalMs?: number;
  /** First retry after a failure (ms); default 1 000, doubled per failure up to {@link maxBackoffMs}. */
  initialBackoffMs?: number;
  /** Longest wait between checks while failing (ms); default 30 000 (capped by `intervalMs`). */
  maxBackoffMs?: number;
  clock?: Clock;
  /** The check (tests); default {@link checkUpstream}. */
  check?: typeof checkUpstream;
}

/** Periodic upstream check; {@link reason} is what `/readyz`'s `upstream` check reports. */
export class UpstreamMonitor {
  readonly #o: UpstreamMonitorOptions;
  readonly #clock: Clock;
  readonly #intervalMs: number;
  #reason: string | undefined = 'not checked yet';
  #version: string | undefined;
  #passedBefore = false;
  #backoffMs: number;
  #timer: TimerHandle | undefined;
  #stopped = false;
  #running: Promise<void> | undefined;

  constructor(o: UpstreamMonitorOptions) {
    this.#o = o;
    this.#clock = o.clock ?? realClock;
    this.#intervalMs = o.intervalMs ?? 60_000;
    this.#backoffMs = o.initialBackoffMs ?? 1_000;
  }

  /** Undefined while the last check passed; else its one-line reason (`not checked yet` before the first). */
  reason(): string | undefined {
    return this.#reason;
  }

  /** The apiserver's `gitVersion` (`v1.37.2`) as the last passed check read it; undefined before one passed. */
  version(): string | undefined {
    return this.#version;
  }

  /** Runs the first check now and schedules the next ones. Resolves after the first check. */
  start(): Promise<void> {
    return this.#run();
  }

  /** Stops the schedule (a check in flight completes but schedules nothing). */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #run(): Promise<void> {
    this.#running ??= this.#once().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #once(): Promise<void> {
    const failing = this.#reason !== undefined;
    const r = await (this.#o.check ?? checkUpstream)(this.#o.target, { identity: failing });
    if (this.#stopped) return;
    const before = this.#reason;
    if (r.ok) {
      this.#reason = undefined;
      this.#version = r.version;
      this.#backoffMs = this.#o.initialBackoffMs ?? 1_000;
      if (before !== undefined) {
        this.#o.log.info(
          { version: r.version, ...(r.user !== undefined ? { user: r.user } : {}) },
          this.#passedBefore ? 'upstream check passed again: ready' : 'upstream check passed',
        );
      }
      this.#passedBefore = true;
      this.#schedule(this.#intervalMs);
    } else {
      this.#reason = r.reason;
      if (r.reason !== before) this.#o.log.warn({ reason: r.reason }, `upstream check failed: ${r.reason}`);
      const wait = this.#backoffMs;
      const cap = Math.min(this.#o.maxBackoffMs ?? 30_000, this.#intervalMs);
      this.#backoffMs = Math.min(this.#backoffMs * 2, cap);
      this.#schedule(Math.min(wait, cap));
    }
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#run();
    }, ms);
  }
}
