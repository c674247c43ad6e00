/**
 * The reflector's retry delays: exponential backoff with jitter, capped, reset after quiet time.
 * Exports {@link Backoff} and {@link BackoffOptions}; defaults (800 ms doubling to a 30 000 ms cap,
 * reset after 120 000 ms) copy client-go `tools/cache/reflector.go` and apimachinery `wait.Backoff`.
 */
import type { Clock } from '../util/clock.ts';

/** Parameters of {@link Backoff}; defaults are client-go reflector.go's `defaultBackoff*`. */
export interface BackoffOptions {
  clock: Clock;
  /** Uniform [0, 1) source; default `Math.random`. Tests inject a fixed sequence. */
  random?: () => number;
  /** First nominal delay (ms); default 800. */
  initialMs?: number;
  /** Growth per step; default 2. */
  factor?: number;
  /** Each sleep is uniform in [d, d·(1+jitter)); default 1.0. */
  jitter?: number;
  /** Nominal delay cap (ms); default 30 000. */
  capMs?: number;
  /** Back to `initialMs` when no backoff was requested for this long (ms); default 120 000. */
  resetMs?: number;
}

/**
 * Exponential backoff with full jitter and a reset, as client-go's reflector uses it
 * (apimachinery `wait.Backoff.Step` + the reflector's backoff manager).
 *
 * Nominal delays 0.8, 1.6, 3.2, 6.4, 12.8, 25.6 s, then the cap 30 s; each returned sleep is
 * uniform in [d, 2d), so the steady state is [30, 60) s. When the previous call was more than
 * `resetMs` ago the sequence restarts at 0.8 s ("if we don't backoff for 2min, assume API server
 * is healthy and we reset the backoff"). This is the reset of client-go's
 * `exponentialBackoffManagerImpl` (measured from the last backoff); the newer
 * `wait.Backoff.DelayWithReset` measures from the last reset instead, which can reset in the
 * middle of an outage; we keep the older, documented intent.
 */
export class Backoff {
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #initialMs: number;
  readonly #factor: number;
  readonly #jitter: number;
  readonly #capMs: number;
  readonly #resetMs: number;
  #durationMs: number;
  #capped = false;
  #lastAt: number | undefined;

  constructor(opts: BackoffOptions) {
    this.#clock = opts.clock;
    this.#random = opts.random ?? Math.random;
    this.#initialMs = opts.initialMs ?? 800;
    this.#factor = opts.factor ?? 2;
    this.#jitter = opts.jitter ?? 1;
    this.#capMs = opts.capMs ?? 30_000;
    this.#resetMs = opts.resetMs ?? 120_000;
    this.#durationMs = this.#initialMs;
  }

  /** The next sleep (ms), advancing the sequence. */
  next(): number {
    const now = this.#clock.now();
    if (this.#lastAt !== undefined && now - this.#lastAt > this.#resetMs) this.reset();
    this.#lastAt = now;
    const d = this.#durationMs;
    if (!this.#capped) {
      const n = d * this.#factor;
      if (n > this.#capMs) {
        this.#durationMs = this.#capMs;
        this.#capped = true;
      } else {
        this.#durationMs = n;
      }
    }
    return this.#jitter > 0 ? d + this.#random() * this.#jitter * d : d;
  }

  /** Restart the sequence at `initialMs`. */
  reset(): void {
    this.#durationMs = this.#initialMs;
    this.#capped = false;
  }
}
