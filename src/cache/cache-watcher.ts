/**
 * One watch served from the cache: apiserver `storage/cacher/cache_watcher.go`. It first plays
 * its initial interval (snapshot ADDED events or history since an RV, produced lazily as the
 * client reads, like `watch_cache_interval.go`), then live events in order. Live events wait in
 * a bounded per-watcher queue, so a stalled client never blocks the reflector or the other
 * watchers.
 *
 * A watcher whose queue is full is PARKED (the apiserver's `WatchCacheStallResume`, KEP-6268):
 * its queue is released and it keeps only its position — the RV of the last event it handed to
 * its stream (what was handed over reaches the client before anything else; what was only
 * queued is dropped and replayed). When its client reads again (the stream asks for more, i.e.
 * the response drained) it streams the history window after its position, filtered as live
 * events are, and rejoins the live fan-out once it has caught up: every event once, in order.
 * No bookmark while parked. It ends only when its position has left the window (its backlog,
 * then one ERROR event 410 "too old resource version", as the apiserver's cacher ends such a
 * watcher) or when the bound on parked watchers closes it (`parked-watchers.ts`). Without
 * {@link WatcherOptions.parking} a full queue closes the watcher (the apiserver without the
 * gate, reason `unresponsive`).
 */
import { Readable } from 'node:stream';
import type { MetadataVersion } from '../apimachinery/accept.ts';
import { encodeStatus } from '../apimachinery/go-json.ts';
import { tooOldResourceVersion } from '../apimachinery/status.ts';
import { eventLine, type WireLine } from '../apimachinery/watch-event.ts';
import { FifoQueue } from './fifo-queue.ts';
import type { HistoryEvent } from './history.ts';
import type { StoreEntry } from './store.ts';

/** Why a watcher ended. */
export type CloseReason =
  /** The client went away, or the server called `close()`. */
  | 'client'
  /** Its buffer overflowed: the client did not read fast enough (parking disabled). */
  | 'overflow'
  /**
   * Parked (or catching up), its position left the history window: its backlog, then a 410
   * ERROR event "too old resource version", then the end of the stream.
   */
  | 'fell-behind'
  /** Parked, and closed to keep the parked watchers within their bound (the longest parked first). */
  | 'parked-bound'
  /** The cache relisted (docs/design.md §3 "Relist"); the client resumes and may get 410. */
  | 'relist'
  /** It asked for an RV older than the window and got a 410 ERROR event. */
  | 'expired'
  /** The cache shut down. */
  | 'shutdown'
  /** Its `timeoutMs` elapsed. */
  | 'timeout';

/**
 * The `reason` of a watcher the cache terminated, as the apiserver's
 * `apiserver_terminated_watchers_total` (`storage/cacher/metrics`, KEP-6268): `unresponsive` its
 * queue filled and parking is disabled; `resource_expired` a parked watcher that had reached the
 * live stream fell out of the window; `resource_expired_initial` the same before its initial
 * events were all handed over; `stalled_client` closed by the bound on parked watchers.
 */
export type TerminationReason =
  | 'unresponsive'
  | 'resource_expired'
  | 'resource_expired_initial'
  | 'stalled_client';

/** The history window a parked watcher resumes from (`History`). */
export interface ResumeSource {
  /** The window's exclusive lower bound: a position below it can no longer resume. */
  readonly start: bigint;
  /** The oldest event with RV > `rv`, or undefined when none. */
  after(rv: bigint): HistoryEvent | undefined;
}

/** How a watcher parks (see the module comment). */
export interface ParkingOptions {
  history: ResumeSource;
  /** Called each time it is parked (queue full). */
  onPark: (w: Watcher) => void;
  /**
   * Called each time it caught up with the window and is live again; `w.catchupEvents` is how
   * many history events that catch-up sent (`apiserver_watch_cache_watcher_catchup_events`).
   */
  onResume: (w: Watcher) => void;
}

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
  /**
   * The RV the apiserver's watcher starts from (`cache_watcher.go` `processInterval`'s
   * resourceVersion: the requested RV, or the snapshot's for initial events; default `minRV`):
   * a timed bookmark at or below it is not sent, as `process` sends only events above it (a
   * bookmark equal to it only before any bookmark was sent: the initial-events-end one, which
   * `initial` carries).
   */
  startRV?: bigint;
  /** The watcher's namespace + label + field filter. */
  filter: (e: StoreEntry) => boolean;
  /** Max live events waiting for the client before it is parked (or closed). */
  bufferEvents: number;
  /**
   * Max bytes of live events waiting for the client before it is parked (or closed) (default: unbounded).
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
  /** Park instead of closing when the queue is full; undefined: close (`overflow`). */
  parking?: ParkingOptions | undefined;
}

/** A live line waiting for the client, with the RV it brings the client to. */
interface Queued {
  rv: bigint;
  line: Buffer;
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
  /** Live events with RV ≤ this are not sent (covered by `initial`, the history or not asked for). */
  #minRV: bigint;
  /** See {@link WatcherOptions.startRV}. */
  readonly #startRV: bigint;
  /**
   * The position: the RV the lines handed to the stream bring the client to (live events and
   * bookmarks; during a catch-up also the history events its filter skips). A parked watcher
   * resumes after it.
   */
  #sentRV: bigint;
  #initial: Iterator<WireLine> | undefined;
  readonly #queue = new FifoQueue<Queued>();
  #reading = false;
  #closeReason: CloseReason | undefined;
  readonly #parking: ParkingOptions | undefined;
  #parked = false;
  #catchupEvents = 0;
  /** Whether its initial events were all handed over when it ended (the termination reason). */
  #reachedLive = false;
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
    this.#startRV = opts.startRV ?? opts.minRV;
    this.#sentRV = opts.minRV;
    this.#initial = opts.initial;
    this.#parking = opts.parking;
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

  /** Set once the cache ended it for cause (see {@link TerminationReason}); undefined otherwise. */
  get terminationReason(): TerminationReason | undefined {
    switch (this.#closeReason) {
      case 'overflow':
        return 'unresponsive';
      case 'fell-behind':
        return this.#reachedLive ? 'resource_expired' : 'resource_expired_initial';
      case 'parked-bound':
        return 'stalled_client';
      default:
        return undefined;
    }
  }

  /** Live events queued and not yet handed to the stream. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Parked or catching up from the history (not fed by the live fan-out). */
  get parked(): boolean {
    return this.#parked;
  }

  /**
   * Events sent from the history since it was last parked: how far behind it was, in events
   * of its filter (KEP-6268's `apiserver_watch_cache_watcher_catchup_events`, read on resume).
   */
  get catchupEvents(): number {
    return this.#catchupEvents;
  }

  /** The RV a parked watcher resumes after (see the field's comment). */
  get position(): bigint {
    return this.#sentRV;
  }

  close(): void {
    this.end('client');
  }

  /** Offers a live change; O(1) apart from the filter. Ignored while parked (the history has it). */
  deliver(e: HistoryEvent): void {
    if (this.closed || this.#parked || e.rv <= this.#minRV) return;
    const line = this.#lineOf(e);
    if (line) this.#enqueue(e.rv, line);
  }

  /**
   * Offers a bookmark at `rv` (sent when `rv` > the RV the watch started from, as the apiserver's
   * `cacheWatcher.process`: a quiet resource gets no periodic or pre-timeout bookmark; none while
   * parked, nor below what a catch-up already sent: KEP-6268, a bookmark must never move the
   * client's RV backwards).
   */
  bookmark(rv: bigint, line: Buffer): void {
    if (this.closed || this.#parked || rv < this.#minRV || rv <= this.#startRV) return;
    this.#enqueue(rv, line);
  }

  /** Closes the watcher because the bound on parked watchers was reached (`parked-watchers.ts`). */
  evictParked(): void {
    this.end('parked-bound');
  }

  /**
   * A parked watcher whose position left the window ends now (backlog, then the 410 ERROR
   * event) rather than when its client reads again: its parked slot is freed at once.
   */
  checkWindow(): void {
    if (this.#parked && !this.closed && this.#parking && this.#sentRV < this.#parking.history.start)
      this.#fellBehind();
  }

  #lineOf(e: HistoryEvent): Buffer | undefined {
    return this.metadata === undefined
      ? e.lineFor(this.#filter)
      : e.metadataLineFor(this.#filter, this.metadata);
  }

  #enqueue(rv: bigint, line: Buffer): void {
    if (this.queued >= this.#bufferEvents || this.#queuedBytes + line.length > this.#bufferBytes) {
      this.#overflow();
      return;
    }
    this.#queue.push({ rv, line });
    this.#queuedBytes += line.length;
    if (this.#reading) this.#pump();
  }

  /** The queue is full: park (release the queue, keep the position), or close without parking. */
  #overflow(): void {
    if (!this.#parking) {
      this.end('overflow');
      return;
    }
    this.#queue.clear();
    this.#queuedBytes = 0;
    this.#parked = true;
    this.#catchupEvents = 0;
    this.#parking.onPark(this);
  }

  #push(line: WireLine): void {
    if (!this.stream.push(line)) this.#reading = false;
  }

  #pump(): void {
    while (this.#reading && !this.closed) {
      if (this.#initial) {
        const r = this.#initial.next();
        if (!r.done) {
          this.#push(r.value);
          continue;
        }
        this.#initial = undefined;
      }
      if (this.#parked) {
        this.#catchUp();
        return;
      }
      const q = this.#queue.shift();
      if (!q) return;
      this.#queuedBytes -= q.line.length;
      if (q.rv > this.#sentRV) this.#sentRV = q.rv;
      this.#push(q.line);
    }
  }

  /**
   * Streams the history after the position while the client reads, one event at a time (the
   * position advances over the events the filter skips too, so a selective watcher does not
   * fall out of the window for events it never wanted); once nothing is left it is live again.
   */
  #catchUp(): void {
    const history = this.#parking!.history;
    while (this.#reading && !this.closed) {
      if (this.#sentRV < history.start) {
        this.#fellBehind();
        return;
      }
      const e = history.after(this.#sentRV);
      if (!e) {
        // Caught up: the live fan-out takes over. Everything the history holds was dispatched
        // or is being dispatched now (append precedes dispatch): skip what was sent from it.
        this.#parked = false;
        if (this.#sentRV > this.#minRV) this.#minRV = this.#sentRV;
        this.#parking!.onResume(this);
        return;
      }
      this.#sentRV = e.rv;
      const line = this.#lineOf(e);
      if (line) {
        this.#catchupEvents++;
        this.#push(line);
      }
    }
  }

  /**
   * Its position left the window: the apiserver's cacher (KEP-6268 `terminate`) sends the
   * backlog, then one ERROR event with the watch cache's 410 Expired Status, then ends.
   */
  #fellBehind(): void {
    const start = this.#parking!.history.start;
    const status = tooOldResourceVersion(this.#sentRV, start).status;
    this.end('fell-behind', eventLine('ERROR', encodeStatus(status)));
  }

  /**
   * Closes the watcher: drops whatever the client has not been handed yet, pushes `finalLine`
   * (e.g. a 410 ERROR event) and ends the stream. Idempotent.
   */
  end(reason: CloseReason, finalLine?: Buffer): void {
    if (this.closed) return;
    this.#closeReason = reason;
    this.#reachedLive = this.#initial === undefined;
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
