/**
 * Injectable time source, so that backoff, liveness windows, bookmarks and history
 * ageing can be unit-tested by stepping a fake clock instead of sleeping
 * (the pattern of client-go's `k8s.io/utils/clock`, "allows tests to manipulate time").
 */
export interface Clock {
  /** Milliseconds since the epoch (like `Date.now()`). */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds; returns a handle for {@link Clock.clearTimeout}. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /** Resolves after `ms` milliseconds; rejects with the signal's reason when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Opaque timer handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = { readonly __timer: true } | NodeJS.Timeout;

/** The real clock: `Date.now()` and Node.js timers (unref'd so they never keep the process alive). */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
  sleep(ms, signal) {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(t);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};
