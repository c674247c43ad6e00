/**
 * Copies a passed-through watch answer's body into the client's response, chunk by chunk with
 * backpressure, and ends it on request at an event boundary (`apimachinery/watch-framing.ts`):
 * the on-demand handover (`--resources=auto`) finishes a passed-through watch once the cache is
 * synced, and the client must see whole events only. Shutdown does not go through here; it
 * stays immediate (`passthrough.ts`).
 *
 * Nor may the handover end a watch sooner than client-go's reflector accepts: a watch that
 * closes less than 1 s after it began without an event is a "very short watch"
 * (`k8s.io/client-go/tools/cache/reflector.go`, `handleAnyWatch`: `watchDuration < 1s &&
 * eventCount == 0` → `VeryShortWatchError`: a warning, a backoff and a full relist instead of
 * resuming). Its clock starts before the watch request is sent (`Reflector.watch`), and, for a
 * watch-list, again once the initial-events-end BOOKMARK has been handled (`watchList` hands
 * the same watch to `Reflector.watch`, which restarts `start` and `eventCount`); every event
 * counts, bookmarks included. So a handover waits until {@link MIN_WATCH_MS} after the later of
 * the relay's creation and the last BOOKMARK relayed (any BOOKMARK, conservatively: it may be
 * the initial-events-end one), unless another event was relayed after that point.
 */
import type { ServerResponse } from 'node:http';
import { watchEventResourceVersion } from '../apimachinery/protobuf-meta.ts';
import { EventBoundary, type WatchFraming } from '../apimachinery/watch-framing.ts';
import { type Clock, realClock, type TimerHandle } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';

/** How long a handover waits for the event in flight to complete before ending anyway (ms). */
export const HANDOVER_WAIT_MS = 5_000;

/**
 * The least time a handover lets a watch last without an event after it began or after its
 * last BOOKMARK (ms): client-go's 1 s "very short watch" bound plus a margin for the time
 * between the reflector's clock start and this relay's (request sent, head received).
 */
export const MIN_WATCH_MS = 1_500;

export interface WatchRelayOptions {
  /** Stops reading the upstream answer (aborts the upstream request). */
  abortUpstream: () => void;
  log: Logger;
  /** For the log line of a handover that had to cut an event. */
  url: string | undefined;
  /** Default {@link HANDOVER_WAIT_MS}. */
  waitMs?: number;
  /** Default {@link MIN_WATCH_MS}. */
  minWatchMs?: number;
  /** Time and timers (ms); default {@link MONOTONIC_CLOCK}. Tests step a fake one. */
  clock?: Clock;
}

/**
 * How many leading bytes of each relayed event are kept to read its resourceVersion
 * ({@link WatchRelay.lastResourceVersion}): an object's metadata comes first in both encodings
 * (the apiserver's JSON of a built-in type and its protobuf), its RV within the first few hundred
 * bytes but for very long names, labels or annotations of a custom resource (JSON keys sorted).
 */
export const EVENT_HEAD_BYTES = 4096;

/** The first `"resourceVersion":"N"` of a JSON event's head. */
const JSON_RV = /"resourceVersion":"(\d+)"/;

/** The real timers with `performance.now()` as `now` (monotonic: a wall-clock step cannot end a watch early). */
const MONOTONIC_CLOCK: Clock = { ...realClock, now: () => performance.now() };

/**
 * One relayed watch answer. Call {@link start} once its head is written, then {@link pump}
 * its body; {@link handover} may come at any time (before the head too).
 */
export class WatchRelay {
  readonly #res: ServerResponse;
  readonly #o: WatchRelayOptions;
  readonly #clock: Clock;
  #boundary: EventBoundary | undefined;
  #started = false;
  #handoverAsked = false;
  #ended = false;
  /** When the watch began, or its last BOOKMARK was relayed (the `now()` clock). */
  #since: number;
  /** Whether an event other than a BOOKMARK was relayed since {@link #since}. */
  #eventSince = false;
  /** Waits for {@link MIN_WATCH_MS} to pass (a handover asked too soon). */
  #minTimer: TimerHandle | undefined;
  /** Bounds the wait for the event in flight ({@link HANDOVER_WAIT_MS}). */
  #cutTimer: TimerHandle | undefined;
  /** The first {@link EVENT_HEAD_BYTES} of the event in flight (pieces as relayed). */
  #head: Uint8Array[] = [];
  #headBytes = 0;
  /** The head of the last complete event. */
  #lastHead: Buffer | undefined;

  constructor(res: ServerResponse, o: WatchRelayOptions) {
    this.#res = res;
    this.#o = o;
    this.#clock = o.clock ?? MONOTONIC_CLOCK;
    this.#since = this.#clock.now();
  }

  /** Whether the relay ended the response (a handover): the caller must not end it again. */
  get ended(): boolean {
    return this.#ended;
  }

  /**
   * The answer's head was written: `framing` is its body's framing (undefined: unknown media
   * type, encoded body, or not a 2xx answer — such a stream is never ended by a handover).
   */
  start(framing: WatchFraming | undefined): void {
    this.#started = true;
    this.#boundary = framing ? new EventBoundary(framing) : undefined;
    if (this.#handoverAsked) this.handover();
  }

  /**
   * Ends the response cleanly after the last complete event written, once client-go would not
   * take it for a "very short watch" (see the module doc: at once when an event was relayed
   * since the watch began or since its last BOOKMARK, else once `minWatchMs` passed since
   * then), on a boundary: at once when on one, else once the event in flight is written (at
   * most `waitMs` later; then it ends anyway, cut, and logs a warning). A stream without
   * framing is left alone. Idempotent.
   */
  handover(): void {
    this.#handoverAsked = true;
    this.#check();
  }

  /**
   * The resourceVersion of the last complete event relayed (a BOOKMARK's too): where the
   * client's watch stands, the RV its re-watch after a handover resumes from. undefined before
   * any event, for a stream without framing, or when the event's head does not show it.
   */
  lastResourceVersion(): bigint | undefined {
    const head = this.#lastHead;
    if (!head || !this.#boundary) return undefined;
    const rv =
      this.#boundary.framing === 'json-lines'
        ? JSON_RV.exec(head.toString('latin1'))?.[1]
        : watchEventResourceVersion(head.subarray(4)); // after the 4-byte length header
    return rv !== undefined && /^\d+$/.test(rv) ? BigInt(rv) : undefined;
  }

  /** Keeps the first {@link EVENT_HEAD_BYTES} of the event in flight; `complete`: it ended with `piece`. */
  #follow(piece: Uint8Array, complete: boolean): void {
    if (this.#headBytes < EVENT_HEAD_BYTES) {
      const take = piece.subarray(0, EVENT_HEAD_BYTES - this.#headBytes);
      // A copy: the chunk's memory may be reused once written.
      this.#head.push(Buffer.from(take));
      this.#headBytes += take.length;
    }
    if (!complete) return;
    this.#lastHead = Buffer.concat(this.#head, this.#headBytes);
    this.#head = [];
    this.#headBytes = 0;
  }

  /** Writes `body`'s chunks into the response until it ends, the handover ends it, or the client leaves. */
  async pump(body: AsyncIterable<Uint8Array>): Promise<void> {
    try {
      for await (const chunk of body) {
        if (this.#ended) break;
        if (!(await this.#write(chunk))) break;
      }
    } finally {
      this.#clearTimers();
    }
  }

  /** ms until a handover may end the watch (0: now). */
  #tooSoonMs(): number {
    if (this.#eventSince) return 0;
    const min = this.#o.minWatchMs ?? MIN_WATCH_MS;
    return Math.max(0, this.#since + min - this.#clock.now());
  }

  /** A handover is asked: ends the watch now when it may, else arms the timer it waits on. */
  #check(): void {
    if (!this.#handoverAsked || !this.#started || this.#ended) return;
    const b = this.#boundary;
    if (!b) return;
    const wait = this.#tooSoonMs();
    if (wait > 0) {
      // Too soon (again, after a BOOKMARK): wait; the event in flight is not the reason.
      if (this.#cutTimer) this.#clock.clearTimeout(this.#cutTimer);
      this.#cutTimer = undefined;
      if (this.#minTimer) this.#clock.clearTimeout(this.#minTimer);
      this.#minTimer = this.#clock.setTimeout(() => {
        this.#minTimer = undefined;
        this.#check();
      }, wait);
      return;
    }
    if (this.#minTimer) this.#clock.clearTimeout(this.#minTimer);
    this.#minTimer = undefined;
    if (b.atBoundary) {
      this.#finish();
      return;
    }
    if (this.#cutTimer) return;
    this.#cutTimer = this.#clock.setTimeout(() => {
      this.#o.log.warn(
        { url: this.#o.url, waitMs: this.#o.waitMs ?? HANDOVER_WAIT_MS },
        'handover: the watch event in flight did not complete in time; the watch is ended inside it',
      );
      this.#finish();
    }, this.#o.waitMs ?? HANDOVER_WAIT_MS);
  }

  /**
   * Writes one chunk, following its events; with a handover asked, stops after the first event
   * end at which the watch may end (writes up to it, finishes). False once the relay ended the
   * response (stop reading).
   */
  async #write(chunk: Uint8Array): Promise<boolean> {
    const b = this.#boundary;
    const res = this.#res;
    if (b) {
      let off = 0;
      while (off < chunk.length) {
        const piece = off === 0 ? chunk : chunk.subarray(off);
        const n = b.next(piece);
        this.#follow(n < 0 ? piece : piece.subarray(0, n), n >= 0);
        if (n < 0) break;
        off += n;
        if (b.lastWasBookmark) {
          this.#since = this.#clock.now();
          this.#eventSince = false;
        } else this.#eventSince = true;
        if (!this.#handoverAsked) continue;
        if (this.#tooSoonMs() === 0) {
          res.write(off === chunk.length ? chunk : chunk.subarray(0, off));
          this.#finish();
          return false;
        }
        this.#check(); // too soon now (a BOOKMARK): wait again
      }
    }
    if (!res.write(chunk)) await drained(res);
    return !this.#ended && !res.destroyed;
  }

  #finish(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#clearTimers();
    this.#o.abortUpstream();
    this.#res.end();
  }

  #clearTimers(): void {
    if (this.#minTimer) this.#clock.clearTimeout(this.#minTimer);
    if (this.#cutTimer) this.#clock.clearTimeout(this.#cutTimer);
    this.#minTimer = undefined;
    this.#cutTimer = undefined;
  }
}

/** Resolves once `res` can take more, or will take nothing more (closed, finished). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      res.off('finish', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
    res.on('finish', done);
  });
}
