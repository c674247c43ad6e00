/**
 * Readers blocked until the cache reaches a resourceVersion: apiserver
 * `storage/cacher/watch_cache.go` `waitUntilFreshAndBlock` (a condition variable broadcast on
 * every RV change, and a timer that gives up), here one promise per waiter.
 */
import type { Clock, TimerHandle } from '../util/clock.ts';

interface Waiter {
  rv: bigint;
  resolve: (ok: boolean) => void;
}

/** The pending waits of one watch cache. */
export class FreshWaiters {
  readonly #clock: Clock;
  readonly #waiters = new Set<Waiter>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * Resolves true when {@link wake} reports an RV ≥ `rv`, false after `timeoutMs` (ms) or when
   * `signal` aborts. Never rejects.
   */
  wait(rv: bigint, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let timer: TimerHandle | undefined;
      const done = (ok: boolean) => {
        if (timer !== undefined) this.#clock.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiters.delete(waiter);
        resolve(ok);
      };
      const onAbort = () => done(false);
      const waiter: Waiter = { rv, resolve: done };
      this.#waiters.add(waiter);
      timer = this.#clock.setTimeout(() => done(false), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** The cache is (now) at `rv`: resolves every wait for an RV ≤ it. */
  wake(rv: bigint): void {
    if (this.#waiters.size === 0) return;
    for (const w of [...this.#waiters]) if (rv >= w.rv) w.resolve(true);
  }
}
