/**
 * One watch served from the cache: apiserver `storage/cacher/cache_watcher.go`. It first plays
 * its initial interval (snapshot ADDED events or history since an RV, produced lazily as the
 * client reads, like `watch_cache_interval.go`), then live events in order. Live events wait in
 * a bounded per-watcher queue; a watcher whose queue is full is closed (the apiserver closes a
 * watcher that blocks its dispatch), so a stalled client never blocks the reflector or the other
 * watchers and memory stays bounded. Its client resumes by RV.
 */
import { Readable } from 'node:stream';
import type { MetadataVersion } from '../apimachinery/accept.ts';
import type { WireLine } from '../apimachinery/watch-event.ts';
import { FifoQueue } from './fifo-queue.ts';
import type { HistoryEvent } from './history.ts';
import type { StoreEntry } from './store.ts';

/** Why a watcher ended. */
export type CloseReason =
  /** The client went away, or the server called `close()`. */
  | 'client'
  /** Its buffer overflowed: the client did not read fast enough. */
  | 'overflow'
  /** The cache relisted (docs/design.md §3 "Relist"); the client resumes and may get 410. */
  | 'relist'
  /** It asked for an RV older than the window and got a 410 ERROR event. */
  | 'expired'
  /** The cache shut down. */
  | 'shutdown'
  /** Its `timeoutMs` elapsed. */
  | 'timeout';

/** What the server streams to a watching client. */
export interface CacheWatcher {
  /**
   * One item per event: its whole line `{"type":…,"object":…}\n` (object WITH kind and
   * apiVersion) as a Buffer or as the chunks to write in order ({@link WireLine}). Object mode.
   * Ends when the watcher closes.
   */
  readonly stream: Readable;
  /** Stops the watcher and ends its stream (idempotent). */
  close(): void;
  readonly closed: boolean;
  /** Set once closed. */
  readonly closeReason: CloseReason | undefined;
}

/** Construction parameters of a {@link Watcher}. */
export interface WatcherOptions {
  /** Lines to send before live events (lazily pulled). */
  initial?: Iterator<WireLine>;
  /** Live events with RV ≤ this are skipped (they are covered by `initial` or were not asked for). */
  minRV: bigint;
  /** The watcher's namespace + label + field filter. */
  filter: (e: StoreEntry) => boolean;
  /** Max live events waiting for the client before it is closed. */
  bufferEvents: number;
  /**
   * Max bytes of live events waiting for the client before it is closed (default: unbounded).
   * Counting events alone let a client that stopped reading pin `bufferEvents` × object size
   * (1 000 × 1.5 MiB) outside the history's byte cap.
   */
  bufferBytes?: number;
  /** Called once when the watcher closes (the cache unregisters it). */
  onClose?: (w: Watcher, reason: CloseReason) => void;
  /**
   * A metadata watch (`as=PartialObjectMetadata`, issue 15): live events carry the
   * PartialObjectMetadata of their object in `meta.k8s.io/<version>` (`initial` and bookmarks
   * must be of that form too). Undefined: whole objects.
   */
  metadata?: MetadataVersion | undefined;
}

/** Stream high-water mark (chunks): what sits in the Readable beyond our own queue. */
const STREAM_HWM = 16;

/**
 * The cache's side of a watcher. Invariants: lines reach the stream in RV order, each at most
 * once; after close nothing more is pushed except the final line given to {@link Watcher.end}.
 */
export class Watcher implements CacheWatcher {
  readonly stream: Readable;
  readonly #filter: (e: StoreEntry) => boolean;
  readonly #bufferEvents: number;
  readonly #bufferBytes: number;
  #queuedBytes = 0;
  readonly #onClose: ((w: Watcher, reason: CloseReason) => void) | undefined;
  #minRV: bigint;
  #initial: Iterator<WireLine> | undefined;
  readonly #queue = new FifoQueue<Buffer>();
  #reading = false;
  #closeReason: CloseReason | undefined;
  /** See {@link WatcherOptions.metadata}. */
  readonly metadata: MetadataVersion | undefined;
  /** Cleared by the owner when the watcher closes (e.g. its bookmark timer). */
  cleanup: (() => void) | undefined;

  constructor(opts: WatcherOptions) {
    this.#filter = opts.filter;
    this.#bufferEvents = opts.bufferEvents;
    this.#bufferBytes = opts.bufferBytes ?? Number.POSITIVE_INFINITY;
    this.#onClose = opts.onClose;
    this.#minRV = opts.minRV;
    this.#initial = opts.initial;
    this.metadata = opts.metadata;
    this.stream = new Readable({
      objectMode: true,
      highWaterMark: STREAM_HWM,
      read: () => {
        this.#reading = true;
        this.#pump();
      },
    });
    this.stream.on('close', () => this.end('client'));
  }

  get closed(): boolean {
    return this.#closeReason !== undefined;
  }

  get closeReason(): CloseReason | undefined {
    return this.#closeReason;
  }

  /** Live events queued and not yet handed to the stream. */
  get queued(): number {
    return this.#queue.length;
  }

  close(): void {
    this.end('client');
  }

  /** Offers a live change; O(1) apart from the filter. */
  deliver(e: HistoryEvent): void {
    if (this.closed || e.rv <= this.#minRV) return;
    const line =
      this.metadata === undefined ? e.lineFor(this.#filter) : e.metadataLineFor(this.#filter, this.metadata);
    if (line) this.#enqueue(line);
  }

  /** Offers a bookmark at `rv` (sent when `rv` ≥ the RV the watch started from, as the apiserver). */
  bookmark(rv: bigint, line: Buffer): void {
    if (this.closed || rv < this.#minRV) return;
    this.#enqueue(line);
  }

  #enqueue(line: Buffer): void {
    if (this.queued >= this.#bufferEvents || this.#queuedBytes + line.length > this.#bufferBytes) {
      this.end('overflow');
      return;
    }
    this.#queue.push(line);
    this.#queuedBytes += line.length;
    if (this.#reading) this.#pump();
  }

  #next(): WireLine | undefined {
    if (this.#initial) {
      const r = this.#initial.next();
      if (!r.done) return r.value;
      this.#initial = undefined;
    }
    const line = this.#queue.shift();
    if (line) this.#queuedBytes -= line.length;
    return line;
  }

  #pump(): void {
    while (this.#reading && !this.closed) {
      const line = this.#next();
      if (!line) return;
      if (!this.stream.push(line)) this.#reading = false;
    }
  }

  /**
   * Closes the watcher: drops whatever the client has not been handed yet, pushes `finalLine`
   * (e.g. a 410 ERROR event) and ends the stream. Idempotent.
   */
  end(reason: CloseReason, finalLine?: Buffer): void {
    if (this.closed) return;
    this.#closeReason = reason;
    this.#initial = undefined;
    this.#queue.clear();
    this.#queuedBytes = 0;
    this.cleanup?.();
    this.cleanup = undefined;
    if (!this.stream.destroyed) {
      if (finalLine) this.stream.push(finalLine);
      this.stream.push(null);
    }
    this.#onClose?.(this, reason);
  }
}
