/**
 * Whether the watch cache may serve: apiserver `storage/cacher/ready.go`. The states and the
 * calls that move between them:
 *
 * ```
 *                 replace()                    close()
 *   pending ────────────────────▶ ready ────────────────────▶ stopped
 *                                 │  ▲                        │  ▲
 *                                 └──┘ replace() (relist)     └──┘ replace()
 * ```
 *
 * - `pending`: no snapshot yet; every read is refused with 429 "storage is (re)initializing",
 *   Retry-After 1 s (ready.go `check`). No watcher can exist, so `close()` has nothing to stop
 *   and the state stays `pending`.
 * - `ready`: the first snapshot is stored. A relist swaps the snapshot atomically (all within one
 *   synchronous `replace()`), so unlike the apiserver the cache never goes back to `pending`.
 * - `stopped`: `close()` ended every watcher (SIGTERM). Unlike ready.go, nothing is refused
 *   afterwards: reads still answer from the last snapshot while in-flight requests drain.
 */
import { type StatusError, tooManyRequests } from '../apimachinery/status.ts';

/** The states of the diagram above. */
export type ReadyState = 'pending' | 'ready' | 'stopped';

/** The pending → ready → stopped state machine of one watch cache. */
export class Ready {
  #state: ReadyState = 'pending';

  get state(): ReadyState {
    return this.#state;
  }

  /** True once a snapshot was stored (`ready` or `stopped`). */
  get synced(): boolean {
    return this.#state !== 'pending';
  }

  /** A snapshot was stored: `pending` → `ready`; other states stay. */
  set(): void {
    if (this.#state === 'pending') this.#state = 'ready';
  }

  /** The watchers were ended: `ready` → `stopped`; `pending` stays (nothing to stop). */
  stop(): void {
    if (this.#state === 'ready') this.#state = 'stopped';
  }

  /**
   * Guards a read (ready.go `check`).
   * @throws StatusError 429 "storage is (re)initializing", Retry-After 1 s, while `pending`.
   */
  check(): void {
    if (this.#state === 'pending') throw notReady();
  }
}

/** The apiserver's answer while its cache is not ready (`ready.go`: 429, retry after 1 s). */
function notReady(): StatusError {
  return tooManyRequests('storage is (re)initializing', 1);
}
