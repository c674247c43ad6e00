/**
 * A port of client-go `tools/cache/retry_with_deadline.go`: the reflector retries internal (5xx)
 * watch errors without relisting while the first error of the current run is at most
 * `maxRetryDurationMs` old (`MaxInternalErrorRetryDuration`, default 30 s here).
 */
import type { Clock } from '../util/clock.ts';

/** client-go `RetryWithDeadline`. */
export interface RetryWithDeadline {
  /** Records `err` when it is retryable (client-go `After`). */
  after(err: unknown): void;
  /** Whether the run of retryable errors is still within the deadline (client-go `ShouldRetry`). */
  shouldRetry(): boolean;
}

/** Options of {@link newRetryWithDeadline}. */
export interface RetryWithDeadlineOptions {
  /** Retry while the first error of the run is at most this old (ms); ≤ 0 never retries. */
  maxRetryDurationMs: number;
  /** A run ends after more than this (ms) without a retryable error; client-go uses 1 min. */
  minResetPeriodMs: number;
  /** Which errors count (the reflector: `isInternalError`). */
  isRetryable: (err: unknown) => boolean;
  clock: Clock;
}

/** client-go `NewRetryWithDeadline`. */
export function newRetryWithDeadline(opts: RetryWithDeadlineOptions): RetryWithDeadline {
  return new RetryWithDeadlineImpl(opts);
}

class RetryWithDeadlineImpl implements RetryWithDeadline {
  readonly #opts: RetryWithDeadlineOptions;
  /** ms since epoch of the first / last retryable error of the current run. */
  #first: number | undefined;
  #last: number | undefined;

  constructor(opts: RetryWithDeadlineOptions) {
    this.#opts = opts;
  }

  #reset(): void {
    this.#first = undefined;
    this.#last = undefined;
  }

  after(err: unknown): void {
    if (!this.#opts.isRetryable(err)) return;
    const now = this.#opts.clock.now();
    if (this.#last !== undefined && now - this.#last > this.#opts.minResetPeriodMs) this.#reset();
    this.#first ??= now;
    this.#last = now;
  }

  shouldRetry(): boolean {
    if (this.#opts.maxRetryDurationMs <= 0) return false;
    if (this.#first !== undefined && this.#opts.clock.now() - this.#first <= this.#opts.maxRetryDurationMs) {
      return true;
    }
    this.#reset();
    return false;
  }
}
