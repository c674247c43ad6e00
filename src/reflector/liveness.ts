/**
 * The liveness watchdog of a watch stream: a stream with no event or bookmark for the liveness
 * window is presumed half-open (a peer that vanished without a FIN/RST, a frozen upstream) and
 * closed so the reflector re-watches from its last RV. Not in client-go, which relies on the
 * watch's `timeoutSeconds` and TCP keepalive; the proxy answers consistent reads from the cache
 * only while the stream is proven live, so it must notice a silent stream within a bounded time
 * (docs/design.md §2).
 */
import type { Clock, TimerHandle } from '../util/clock.ts';

/**
 * A silence the armed stream may keep without being presumed half-open: past the window, until
 * {@link until} (ms since the epoch; `undefined`: not tolerated), {@link onSilent} runs once per
 * silence and the stream stays open. The reflector tolerates it for a resource whose upstream has
 * sent no periodic bookmark (served without the apiserver's watch cache: events by default),
 * until the stream's own `timeoutSeconds` has passed by a window (docs/design.md §2).
 */
export interface SilenceTolerance {
  until(): number | undefined;
  onSilent(): void;
}

/**
 * One timer per armed stream. The timer is not re-armed on every event: when it fires it
 * checks how long the stream has really been idle and sleeps the remainder.
 */
export class LivenessWatchdog {
  readonly #clock: Clock;
  /** No event or bookmark for this long (ms) → presumed half-open. */
  readonly windowMs: number;
  #lastEventAt = 0;
  #timer: TimerHandle | undefined;
  #expired = false;

  constructor(clock: Clock, windowMs: number) {
    this.#clock = clock;
    this.windowMs = windowMs;
  }

  /** The window passed without an event since {@link arm}; the stream was handed to `onExpired`. */
  get expired(): boolean {
    return this.#expired;
  }

  /**
   * Starts watching a new stream; `onExpired` runs once if it stays silent for the window.
   * `since` (ms since the epoch, default now) is when it last heard from upstream: the reflector
   * passes the previous stream's last event while it opens a re-watch, so a re-watch that is
   * not accepted in time (queued behind other requests, a frozen upstream) ends liveness too.
   * `tolerate`: a silence that does not expire the stream (see {@link SilenceTolerance}).
   */
  arm(onExpired: () => void, since = this.#clock.now(), tolerate?: SilenceTolerance): void {
    this.#expired = false;
    this.#lastEventAt = since;
    /** `lastEventAt` of the silence `onSilent` was told about (a later event starts a new one). */
    let toldSilenceOf: number | undefined;
    const check = (delay: number) => {
      this.#timer = this.#clock.setTimeout(() => {
        const now = this.#clock.now();
        const idle = now - this.#lastEventAt;
        if (idle < this.windowMs) {
          check(this.windowMs - idle);
          return;
        }
        const until = tolerate?.until();
        if (until !== undefined && now < until) {
          if (toldSilenceOf !== this.#lastEventAt) {
            toldSilenceOf = this.#lastEventAt;
            tolerate!.onSilent();
          }
          // Again at the deadline, or a window later for the next silence after an event.
          check(Math.min(until - now, this.windowMs));
          return;
        }
        this.#timer = undefined;
        this.#expired = true;
        onExpired();
      }, delay);
    };
    check(Math.max(0, this.windowMs - (this.#clock.now() - since)));
  }

  /** When the armed stream (or the previous one) last delivered an event, ms since the epoch. */
  get lastEventAt(): number {
    return this.#lastEventAt;
  }

  /** An event or bookmark arrived: the stream is alive now. */
  touch(): void {
    this.#lastEventAt = this.#clock.now();
  }

  /** Stops the timer (the stream ended). */
  disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
