/**
 * The progress log line of a long initial sync or relist ("sync in progress": objects so far and
 * the rate), at most once per interval, so an operator can tell a slow sync of a large resource
 * from a stuck one. client-go logs the same situation through `utiltrace` spans
 * ("Objects listed", "Resource version extracted") in `tools/cache/reflector.go`.
 */
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';

/** How a snapshot is being taken. */
export type SyncMode = 'watch-list' | 'list';

/** Options of {@link SyncProgress}. */
export interface SyncProgressOptions {
  log: Logger;
  clock: Clock;
  /** At most one line per this many ms. */
  intervalMs: number;
  mode: SyncMode;
  /** ms since epoch the sync started (for the elapsed time and the rate). */
  start: number;
  /** ms since epoch the interval counts from; default now. */
  lastLogAt?: number | undefined;
}

/** Throttled "sync in progress" lines of one sync. */
export class SyncProgress {
  readonly #o: SyncProgressOptions;
  #lastLogAt: number;

  constructor(opts: SyncProgressOptions) {
    this.#o = opts;
    this.#lastLogAt = opts.lastLogAt ?? opts.clock.now();
  }

  /** Logs when the interval has passed since the last line; `objects` is only read then. */
  tick(objects: () => number): void {
    const now = this.#o.clock.now();
    if (now - this.#lastLogAt < this.#o.intervalMs) return;
    this.#lastLogAt = now;
    const n = objects();
    const s = (now - this.#o.start) / 1000;
    this.#o.log.info(
      { mode: this.#o.mode, objects: n, elapsedSeconds: s, objectsPerSecond: s > 0 ? Math.round(n / s) : 0 },
      'sync in progress',
    );
  }
}
