/**
 * A manually stepped {@link Clock} for tests (client-go keeps its `testingclock` apart from the
 * code, in `k8s.io/utils/clock/testing`; so does this project, under `test/support/`).
 */
import type { Clock, TimerHandle } from '../../src/util/clock.ts';

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
  handle: TimerHandle;
}

/**
 * A manually stepped clock for tests. `step(ms)` advances time and runs every timer due,
 * in due order, awaiting a microtask turn between them so promise chains can react.
 */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: FakeTimer[] = [];

  constructor(startMs = 1_700_000_000_000) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const handle = { __timer: true } as const;
    this.#timers.push({ at: this.#now + Math.max(0, ms), seq: this.#seq++, fn, handle });
    return handle;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers = this.#timers.filter((t) => t.handle !== handle);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const h = this.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        this.clearTimeout(h);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Number of timers not yet fired (tests assert that nothing leaks). */
  pending(): number {
    return this.#timers.length;
  }

  /** Delays of the pending timers relative to now, ascending (ms). */
  pendingDelays(): number[] {
    return this.#timers.map((t) => t.at - this.#now).sort((a, b) => a - b);
  }

  /** Advances time by `ms`, firing due timers in order; yields to the microtask queue between timers. */
  async step(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      await flushMicrotasks();
      const due = this.#timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = Math.max(this.#now, due.at);
      due.fn();
    }
    this.#now = target;
    await flushMicrotasks();
  }
}

/** Lets pending promise callbacks run (several turns, for chains of awaits). */
export async function flushMicrotasks(turns = 20): Promise<void> {
  for (let i = 0; i < turns; i++) await Promise.resolve();
}
