/**
 * The ring of recent events that decides how far back a WATCH can resume: apiserver
 * `storage/cacher/watch_cache.go` (the cyclic `cache` buffer, `resizeCacheLocked`: keep events
 * younger than `eventFreshDuration` (75 s), grow while they are that fresh) and
 * `watch_cache_interval.go` (the interval of events after an RV). Each event's wire line is
 * encoded once here and shared by every watcher (apiserver `caching_object.go`).
 */
import type { MetadataVersion } from '../apimachinery/accept.ts';
import { eventLine, setLineSource, type WatchEventType } from '../apimachinery/watch-event.ts';
import { FifoQueue } from './fifo-queue.ts';
import { bufferBytes, EVENT_OVERHEAD, type Meter } from './memory-size.ts';
import { metadataObject } from './metadata-view.ts';
import type { StoreEntry } from './store.ts';

/** Which line of an event a watcher receives (cache_watcher.go `convertToWatchEvent`). */
type Variant = 'line' | 'added' | 'deletedPrev';

/** ADDED / MODIFIED / DELETED as received from upstream. */
export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * One change. `cur` is the object the upstream sent (for DELETED, its last state at the
 * deletion's RV); `prev` the stored state it replaced (undefined for a first ADDED). Must not be
 * modified after creation, except for the lazily built transition lines.
 */
export class HistoryEvent {
  readonly type: ChangeType;
  readonly rv: bigint;
  readonly cur: StoreEntry;
  readonly prev: StoreEntry | undefined;
  /** Clock time (ms) the event was recorded. */
  readonly at: number;
  /** The event as received, encoded once for every watcher. */
  readonly line: Buffer;
  #deletedPrevLine: Buffer | undefined;
  #addedLine: Buffer | undefined;
  /** PartialObjectMetadata lines (`variant/version`), built on first use for metadata watchers. */
  #metadataLines: Map<string, Buffer> | undefined;
  #metadataBytes = 0;
  #meter: Meter | undefined;

  constructor(type: ChangeType, cur: StoreEntry, prev: StoreEntry | undefined, at: number) {
    this.type = type;
    this.rv = cur.rv;
    this.cur = cur;
    this.prev = prev;
    this.at = at;
    // One contiguous line per live event, shared by every watcher (one write each in the fan-out).
    this.line = eventLine(type, cur.wire);
    // Its object is the stored entry's bytes: protobuf keeps one message per entry for both.
    if (type !== 'DELETED') setLineSource(this.line, cur);
  }

  /**
   * Bytes this event keeps alive (see `memory-size.ts`): its line, the ADDED and DELETED
   * transition lines once built, the replaced entry and, for a DELETED, the object's last state —
   * both held by nobody else — and its bookkeeping.
   */
  get size(): number {
    let n = EVENT_OVERHEAD + bufferBytes(this.line) + (this.prev?.size ?? 0);
    if (this.type === 'DELETED') n += this.cur.size;
    else if (this.#deletedPrevLine) n += bufferBytes(this.#deletedPrevLine);
    if (this.#addedLine) n += bufferBytes(this.#addedLine);
    return n + this.#metadataBytes;
  }

  /** Sends this event's later growth (lines built on first use) to `meter`; undefined detaches it. */
  meter(meter: Meter | undefined): void {
    this.#meter = meter;
  }

  /**
   * The event leaves the history: releases the entries only it held (the replaced one, and for
   * a DELETED the object's last state) so their slab bytes count as free (`slab.ts`).
   */
  release(): void {
    this.#meter = undefined;
    this.prev?.release();
    if (this.type === 'DELETED') this.cur.release();
  }

  /** The object newly matching a watcher's selector: sent as ADDED (cache_watcher.go); built once. */
  get addedLine(): Buffer {
    if (this.type === 'ADDED') return this.line;
    if (!this.#addedLine) {
      this.#addedLine = eventLine('ADDED', this.cur.wire);
      setLineSource(this.#addedLine, this.cur);
      this.#meter?.(bufferBytes(this.#addedLine));
    }
    return this.#addedLine;
  }

  /**
   * The object no longer matching a watcher's selector: sent as DELETED carrying the PREVIOUS
   * object's content with the event's RV (cache_watcher.go `convertToWatchEvent`).
   */
  get deletedPrevLine(): Buffer {
    if (this.type === 'DELETED') return this.line;
    if (!this.#deletedPrevLine) {
      const src = this.prev ? withResourceVersion(this.prev.raw, this.prev.rv, this.rv) : this.cur.wire;
      this.#deletedPrevLine = eventLine('DELETED', src);
      this.#meter?.(bufferBytes(this.#deletedPrevLine));
    }
    return this.#deletedPrevLine;
  }

  /**
   * The line a watcher whose selector is `passes` receives, or undefined when the event does
   * not concern it (cache_watcher.go `convertToWatchEvent`): a DELETED is sent when the object
   * it removes matched; a MODIFIED into the selector becomes ADDED, out of it DELETED.
   */
  lineFor(passes: (e: StoreEntry) => boolean): Buffer | undefined {
    const v = this.#variantFor(passes);
    if (v === 'line') return this.line;
    if (v === 'added') return this.addedLine;
    if (v === 'deletedPrev') return this.deletedPrevLine;
    return undefined;
  }

  /**
   * {@link lineFor} for a metadata watcher (`as=PartialObjectMetadata`): the same event with a
   * PartialObjectMetadata object in `meta.k8s.io/<version>`, built from the object's `metadata`
   * bytes once per event and shared by every such watcher (caching_object.go).
   */
  metadataLineFor(passes: (e: StoreEntry) => boolean, version: MetadataVersion): Buffer | undefined {
    const v = this.#variantFor(passes);
    if (v === undefined) return undefined;
    const key = `${v}/${version}`;
    this.#metadataLines ??= new Map();
    let line = this.#metadataLines.get(key);
    if (!line) {
      let type: WatchEventType = this.type;
      let metadata = this.cur.metadata;
      if (v === 'added') type = 'ADDED';
      else if (v === 'deletedPrev' && this.type !== 'DELETED') {
        type = 'DELETED';
        // The previous object's metadata with the event's RV (its own RV is the first in it).
        if (this.prev) metadata = withResourceVersion(this.prev.metadata, this.prev.rv, this.rv);
      }
      line = eventLine(type, metadataObject(version, metadata));
      this.#metadataLines.set(key, line);
      this.#metadataBytes += bufferBytes(line);
      this.#meter?.(bufferBytes(line));
    }
    return line;
  }

  #variantFor(passes: (e: StoreEntry) => boolean): Variant | undefined {
    if (this.type === 'DELETED') return this.prev && passes(this.prev) ? 'line' : undefined;
    const cur = passes(this.cur);
    const prev = this.prev !== undefined && passes(this.prev);
    if (cur && prev) return 'line';
    if (cur) return 'added';
    if (prev) return 'deletedPrev';
    return undefined;
  }
}

/**
 * `raw` with its `metadata.resourceVersion` replaced. The first `"resourceVersion":"<old>"` is
 * the object's own: ObjectMeta comes before any nested object reference (e.g. an Event's
 * `involvedObject`), and the byte pattern cannot occur inside a JSON string (its quotes would be
 * escaped).
 */
export function withResourceVersion(raw: Buffer, oldRV: bigint, newRV: bigint): Buffer {
  const needle = Buffer.from(`"resourceVersion":"${oldRV}"`);
  const at = raw.indexOf(needle);
  if (at < 0) return raw;
  const replacement = Buffer.from(`"resourceVersion":"${newRV}"`);
  return Buffer.concat([raw.subarray(0, at), replacement, raw.subarray(at + needle.length)]);
}

/** Limits of a {@link History}. */
export interface HistoryLimits {
  /** Events younger than this are never evicted except by the hard caps. ms. */
  minAgeMs: number;
  /** Older events are kept while there are at most this many events. */
  minEvents: number;
  /** Hard cap on events. */
  maxEvents: number;
  /** Hard cap on the bytes the events hold (see {@link HistoryEvent.size}). */
  maxBytes: number;
}

/**
 * Events in strictly increasing RV order, and the window (start, current] they cover: a watch
 * may resume from any RV ≥ `start`. Invariant: every event after `start` that the cache applied
 * is in the ring, so a resume never skips one.
 */
export class History {
  readonly #limits: HistoryLimits;
  readonly #events = new FifoQueue<HistoryEvent>();
  #bytes = 0;
  #start = 0n;
  #epoch = 0;
  /**
   * The restored events (`restore`): up to this RV, aged without `#restoredPauseMs`, the time
   * between the snapshot being taken and its restore (the process was not running).
   */
  #restoredThrough = 0n;
  #restoredPauseMs = 0;
  /** Where the buffered events' later growth is counted. */
  readonly #meter: Meter = (bytes) => {
    this.#bytes += bytes;
  };

  constructor(limits: HistoryLimits) {
    this.#limits = limits;
  }

  /** The window's exclusive lower bound: the oldest RV a watch may resume from. */
  get start(): bigint {
    return this.#start;
  }

  get length(): number {
    return this.#events.length;
  }

  /** Counts the snapshots (`reset`): an RV means the same state only within one epoch. */
  get epoch(): number {
    return this.#epoch;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** The oldest buffered event, if any. */
  oldest(): HistoryEvent | undefined {
    return this.#events.peek();
  }

  /** Empties the ring and restarts the window at `rv` (a new snapshot). */
  reset(rv: bigint): void {
    for (let i = 0; i < this.#events.length; i++) this.#events.at(i).release();
    this.#events.clear();
    this.#bytes = 0;
    this.#start = rv;
    this.#epoch++;
    this.#restoredThrough = 0n;
    this.#restoredPauseMs = 0;
  }

  /**
   * Restores a saved window (`restored-cache.ts`): its start and its events, oldest first with
   * increasing RVs above it. `pausedMs`: the time between the snapshot being taken and now, when
   * the process was down; the restored events' age for `minAgeMs` does not count it (the caps on
   * events and bytes apply as ever). Without that, a restart that took longer than `minAgeMs`
   * minus an event's age at shutdown evicted the event as soon as the downtime's events arrived
   * from the upstream, before the clients that held its RV had reconnected: each got 410 and
   * relisted although the restored window plus the resumed watch held every event after its RV
   * (and the apiserver's window, sized by capacity, still held them too).
   */
  restore(start: bigint, events: readonly HistoryEvent[], pausedMs = 0): void {
    this.reset(start);
    for (const e of events) {
      this.#events.push(e);
      this.#bytes += e.size;
      e.meter(this.#meter);
    }
    this.#restoredThrough = events.at(-1)?.rv ?? 0n;
    this.#restoredPauseMs = Math.max(0, pausedMs);
  }

  /**
   * Lowers the window's start to `rv` (< start): the caller proved with the upstream that the
   * resource had no event in (rv, start] (reflector/gap-proof.ts), so a watch resuming anywhere
   * in that range misses nothing. Refused (false) when an eviction has already moved the start
   * (events were dropped) or `rv` is not below it.
   */
  extendBack(rv: bigint, provenStart: bigint): boolean {
    if (rv >= this.#start || provenStart !== this.#start) return false;
    this.#start = rv;
    return true;
  }

  /** Appends (RV must exceed every buffered one), then evicts per the limits at time `now`. */
  append(e: HistoryEvent, now: number): void {
    this.#events.push(e);
    this.#bytes += e.size;
    e.meter(this.#meter);
    this.#evict(now);
  }

  #evict(now: number): void {
    const { minAgeMs, minEvents, maxEvents, maxBytes } = this.#limits;
    let evicted: HistoryEvent | undefined;
    for (;;) {
      const head = this.#events.peek();
      if (!head) break;
      const n = this.length;
      const age = now - head.at - (head.rv <= this.#restoredThrough ? this.#restoredPauseMs : 0);
      const over = n > maxEvents || this.#bytes > maxBytes || (n > minEvents && age > minAgeMs);
      if (!over) break;
      this.#events.shift();
      this.#bytes -= head.size;
      head.release();
      evicted = head;
    }
    if (!evicted) return;
    // As the apiserver: the window starts just below the oldest event still buffered.
    const next = this.#events.peek();
    this.#start = next ? next.rv - 1n : evicted.rv;
  }

  /** Index (0 = oldest) of the first buffered event with RV > `rv` (binary search). */
  #firstAfter(rv: bigint): number {
    let lo = 0;
    let hi = this.#events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#events.at(mid).rv > rv) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** The entries only the buffered events hold (replaced ones, DELETED objects' last states). */
  *heldEntries(): Generator<StoreEntry> {
    for (let i = 0; i < this.#events.length; i++) {
      const e = this.#events.at(i);
      if (e.prev) yield e.prev;
      if (e.type === 'DELETED') yield e.cur;
    }
  }

  /**
   * The oldest buffered event with RV > `rv`, or undefined when none (O(log n), no copy): a
   * parked watcher resuming (`cache-watcher.ts`) walks the window one event at a time with it, so
   * it holds nothing but its RV between two reads and never pins evicted events.
   */
  after(rv: bigint): HistoryEvent | undefined {
    const i = this.#firstAfter(rv);
    return i < this.#events.length ? this.#events.at(i) : undefined;
  }

  /** The buffered events with RV > `rv`, oldest first (a copy: later evictions do not affect it). */
  since(rv: bigint): HistoryEvent[] {
    return this.#events.sliceFrom(this.#firstAfter(rv));
  }

  /** The same, newest first, without copying. */
  *newestFirstAfter(rv: bigint): Generator<HistoryEvent> {
    const stop = this.#firstAfter(rv);
    for (let i = this.#events.length - 1; i >= stop; i--) yield this.#events.at(i);
  }
}
