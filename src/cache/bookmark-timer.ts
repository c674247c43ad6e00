/**
 * When each watcher gets its BOOKMARK and its end: apiserver `storage/cacher/cache_watcher.go`
 * (`nextBookmarkTime`: every `bookmarkFrequency`, and once shortly before the watch's deadline so
 * the client resumes from a fresh RV) and the cacher's bookmark timer (`cacher.go`
 * `bookmarkWatchers`), here one clock timer per watcher. The deadline lives here too, because the
 * bookmark schedule is computed from it.
 */
import type { Clock, TimerHandle } from '../util/clock.ts';
import type { Watcher } from './cache-watcher.ts';

/** How long before a watch's deadline its last bookmark is sent, ms (cache_watcher.go: 2 s). */
const BEFORE_DEADLINE_MS = 2000;

/** Construction options of a {@link BookmarkTimer}. */
export interface BookmarkTimerOptions {
  /** Injected time source (tests step a FakeClock). */
  clock: Clock;
  /** Period of bookmarks, ms (apiserver `bookmarkFrequency`). */
  intervalMs: number;
  /** Sends the current bookmark to `w` (called when its timer fires and `w` is still open). */
  send: (w: Watcher) => void;
}

/** Arms the per-watcher timers; every timer of a watcher is cleared when it ends. */
export class BookmarkTimer {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #send: (w: Watcher) => void;

  constructor(opts: BookmarkTimerOptions) {
    this.#clock = opts.clock;
    this.#intervalMs = opts.intervalMs;
    this.#send = opts.send;
  }

  /**
   * Arms `w`'s deadline (after `timeoutMs`, ms, it ends with reason `timeout`) and, when
   * `bookmarks`, its periodic bookmarks. Takes over `w.cleanup`.
   */
  arm(w: Watcher, timeoutMs: number | undefined, bookmarks: boolean): void {
    const deadline = timeoutMs !== undefined ? this.#clock.now() + timeoutMs : undefined;
    const timers: TimerHandle[] = [];
    w.cleanup = () => {
      for (const t of timers) this.#clock.clearTimeout(t);
    };
    if (timeoutMs !== undefined) timers.push(this.#clock.setTimeout(() => w.end('timeout'), timeoutMs));
    if (bookmarks) this.#schedule(w, deadline, timers);
  }

  /**
   * The next bookmark of `w`: every interval, or {@link BEFORE_DEADLINE_MS} before its deadline
   * when that comes first; none once the pre-deadline moment has passed (cache_watcher.go
   * `nextBookmarkTime`). `timers` holds the watcher's live timer handles.
   */
  #schedule(w: Watcher, deadline: number | undefined, timers: TimerHandle[]): void {
    const now = this.#clock.now();
    let at = now + this.#intervalMs;
    if (deadline !== undefined && deadline - BEFORE_DEADLINE_MS < at) at = deadline - BEFORE_DEADLINE_MS;
    if (at < now) return;
    const handle = this.#clock.setTimeout(() => {
      timers.splice(timers.indexOf(handle), 1);
      if (w.closed) return;
      this.#send(w);
      if (!w.closed && (deadline === undefined || at < deadline - BEFORE_DEADLINE_MS))
        this.#schedule(w, deadline, timers);
    }, at - now);
    timers.push(handle);
  }
}
