/**
 * Copies a passed-through watch answer's body into the client's response, chunk by chunk with
 * backpressure, and ends it on request at an event boundary (`apimachinery/watch-framing.ts`):
 * the on-demand handover (`--resources=auto`) finishes a passed-through watch once the cache is
 * synced, and the client must see whole events only. Shutdown does not go through here; it
 * stays immediate (`passthrough.ts`).
 */
import type { ServerResponse } from 'node:http';
import { EventBoundary, type WatchFraming } from '../apimachinery/watch-framing.ts';
import type { Logger } from '../util/logger.ts';

/** How long a handover waits for the event in flight to complete before ending anyway (ms). */
export const HANDOVER_WAIT_MS = 5_000;

export interface WatchRelayOptions {
  /** Stops reading the upstream answer (aborts the upstream request). */
  abortUpstream: () => void;
  log: Logger;
  /** For the log line of a handover that had to cut an event. */
  url: string | undefined;
  /** Default {@link HANDOVER_WAIT_MS}. */
  waitMs?: number;
}

/**
 * One relayed watch answer. Call {@link start} once its head is written, then {@link pump}
 * its body; {@link handover} may come at any time (before the head too).
 */
export class WatchRelay {
  readonly #res: ServerResponse;
  readonly #o: WatchRelayOptions;
  #boundary: EventBoundary | undefined;
  #started = false;
  #handoverAsked = false;
  #ended = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(res: ServerResponse, o: WatchRelayOptions) {
    this.#res = res;
    this.#o = o;
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
   * Ends the response cleanly after the last complete event written, now when on a boundary,
   * else once the event in flight is written (at most `waitMs` later; then it ends anyway, cut,
   * and logs a warning). A stream without framing is left alone. Idempotent.
   */
  handover(): void {
    this.#handoverAsked = true;
    if (!this.#started || this.#ended || this.#timer) return;
    const b = this.#boundary;
    if (!b) return;
    if (b.atBoundary) {
      this.#finish();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#o.log.warn(
        { url: this.#o.url, waitMs: this.#o.waitMs ?? HANDOVER_WAIT_MS },
        'handover: the watch event in flight did not complete in time; the watch is ended inside it',
      );
      this.#finish();
    }, this.#o.waitMs ?? HANDOVER_WAIT_MS);
    this.#timer.unref();
  }

  /** Writes `body`'s chunks into the response until it ends, the handover ends it, or the client leaves. */
  async pump(body: AsyncIterable<Uint8Array>): Promise<void> {
    try {
      for await (const chunk of body) {
        if (this.#ended) break;
        if (!(await this.#write(chunk))) break;
      }
    } finally {
      this.#clearTimer();
    }
  }

  /** Writes one chunk; false once the relay ended the response (stop reading). */
  async #write(chunk: Uint8Array): Promise<boolean> {
    const b = this.#boundary;
    const res = this.#res;
    if (b && this.#timer) {
      // A handover waits for the event in flight: write up to its end, then finish.
      const n = b.cut(chunk);
      if (n >= 0) {
        if (n > 0) res.write(chunk.subarray(0, n));
        this.#finish();
        return false;
      }
    } else b?.push(chunk);
    if (!res.write(chunk)) await drained(res);
    return !this.#ended && !res.destroyed;
  }

  #finish(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#clearTimer();
    this.#o.abortUpstream();
    this.#res.end();
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
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
