/**
 * The watch cache of one resource: apiserver `storage/cacher/watch_cache.go` — the store, the
 * window of recent events (`history.ts`), the current RV and "wait until fresh"
 * (`waitUntilFreshAndBlock`, `fresh-waiters.ts`) — as the {@link CacheSink} the Reflector fills.
 * The rest of the cacher is delegated to collaborators: readiness (`ready.ts`, ready.go), serving
 * LIST/GET/WATCH and the fan-out to watchers (`cacher.ts`, cacher.go), the snapshot or history a
 * reader is served (`watch-cache-interval.ts`) and the bookmark schedule (`bookmark-timer.ts`).
 *
 * All calls are synchronous on the event loop, so a LIST or a new WATCH always sees a consistent
 * (store, history, RV) triple.
 */
import type { Logger } from 'pino';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import type { UpstreamObject } from '../apimachinery/object.ts';
import { tooOldResourceVersion } from '../apimachinery/status.ts';
import type { CacheSink } from '../reflector/cache-sink.ts';
import { type Clock, realClock } from '../util/clock.ts';
import type { CacheWatcher } from './cache-watcher.ts';
import { Cacher, type FanOutHooks, type ListRequest, type WatchRequest } from './cacher.ts';
import { CoalescedProbe } from './coalesced-probe.ts';
import type { CompactionFloor, ServedWindow } from './compaction-floor.ts';
import { BookmarkLines, type ListResult } from './encoding.ts';
import { FreshWaiters } from './fresh-waiters.ts';
import { type ChangeType, History, HistoryEvent } from './history.ts';
import { ParkedWatchers } from './parked-watchers.ts';
import { Ready } from './ready.ts';
import { type CacheCapture, type RestoredCache, restoredEntries } from './restored-cache.ts';
import { SharedGapProofs } from './shared-gap-proofs.ts';
import { parseRV, Store, StoreEntry } from './store.ts';
import { untilAborted } from './until-aborted.ts';
import type { WatchCacheStats } from './watch-cache-stats.ts';
import { type GapProver, WindowExtender, windowExtensionLog } from './window-extension.ts';

export type { WatchCacheStats } from './watch-cache-stats.ts';

/** Construction options of a {@link WatchCache} (and the fan-out's counters, `FanOutHooks`). */
export interface WatchCacheOptions extends FanOutHooks {
  resource: ResourceInfo;
  /** Injected time source (tests step a FakeClock). Default {@link realClock}. */
  clock?: Clock;
  logger?: Logger;
  /** Events younger than this stay in history (apiserver `eventFreshDuration`). ms, default 75 000. */
  historyMinAgeMs?: number;
  /** Older events are still kept while history holds at most this many. Default 100 (apiserver's default capacity). */
  historyMinEvents?: number;
  /** Hard cap on history events. Default 102 400 (apiserver's upper bound). */
  historyMaxEvents?: number;
  /**
   * Hard cap on the bytes the history holds: event lines and the replaced objects, raw and
   * parsed, with their copies (`memory-size.ts`). Default 32 MiB: the shipped sidecar (three
   * resources, 512 MiB limit) stays below its limit under churn (test/integration/memory-churn.test.ts).
   */
  historyMaxBytes?: number;
  /** Live events a watcher may have waiting before it is parked (or closed). Default 1 000. */
  watcherBufferEvents?: number;
  /**
   * Bytes of live events a watcher may have waiting before it is parked (or closed). Default
   * 16 MiB, so clients that stop reading cannot pin more than that (each) beyond the history's cap.
   */
  watcherBufferBytes?: number;
  /** The bound on parked watchers shared by every cache (`--max-parked-watchers`); default: its own. */
  parkedWatchers?: ParkedWatchers;
  /** Period of BOOKMARKs to watchers that allow them. ms, default 60 000 (apiserver `bookmarkFrequency`). */
  bookmarkIntervalMs?: number;
  /**
   * Asks the upstream whether the resource had no event in an RV range (reflector/gap-proof.ts):
   * with it, a watch resuming below the window may extend it backwards
   * ({@link WatchCache.extendWindowBack}); without it, such a watch gets 410.
   */
  gapProver?: GapProver;
  /**
   * Learns the upstream's current revision (etcd's) with one request; undefined when it could
   * not. With it (and `gapProver`) the cache can prove itself fresh for a consistent read
   * ({@link WatchCache.upstreamRevision}, {@link WatchCache.proveNoEventsBetween}).
   */
  revisionProbe?: () => Promise<bigint | undefined>;
  /**
   * The compaction floor polling the upstream about {@link WatchCache.servedWindow} (stopped by
   * `close`): {@link WatchCache.compactedAt} tells which Exact and continue reads go upstream.
   */
  compaction?: CompactionFloor;
}

/**
 * Store, history and watchers of one resource. Thread model: the Reflector calls the
 * {@link CacheSink} methods; the server calls list/get/watch; all on one event loop.
 */
export class WatchCache implements CacheSink {
  readonly resource: ResourceInfo;
  readonly #clock: Clock;
  readonly #logger: Logger | undefined;
  readonly #store: Store;
  readonly #history: History;
  readonly #historyMaxEvents: number;
  readonly #ready = new Ready();
  readonly #bookmarks: BookmarkLines;
  readonly #cacher: Cacher;
  #rv = 0n;
  #live = false;
  readonly #fresh: FreshWaiters;
  #lastSyncTimeMs: number | null = null;
  #lastProgressTimeMs: number | null = null;
  readonly #extender: WindowExtender | undefined;
  readonly #revision: CoalescedProbe<bigint | undefined> | undefined;
  readonly #compaction: CompactionFloor | undefined;
  /** Restored from a snapshot and not yet proven by the upstream (`restore`): when it was taken. */
  #restoredFrom: number | null = null;
  readonly #gapProofs: SharedGapProofs;

  constructor(opts: WatchCacheOptions) {
    this.resource = opts.resource;
    this.#clock = opts.clock ?? realClock;
    this.#logger = opts.logger;
    // Compaction also moves the bytes of the entries only the history holds (issue 12: under
    // churn they are most of the live bytes, and left where they were they kept ~37 % of the
    // slabs wasted).
    this.#store = new Store(opts.resource, undefined, () => this.#history.heldEntries());
    this.#historyMaxEvents = opts.historyMaxEvents ?? 102_400;
    this.#history = new History({
      minAgeMs: opts.historyMinAgeMs ?? 75_000,
      minEvents: opts.historyMinEvents ?? 100,
      maxEvents: this.#historyMaxEvents,
      maxBytes: opts.historyMaxBytes ?? 32 * 1024 * 1024,
    });
    this.#extender = opts.gapProver
      ? new WindowExtender(opts.gapProver, this.#history, windowExtensionLog(opts.logger, opts.resource))
      : undefined;
    this.#gapProofs = new SharedGapProofs(opts.gapProver);
    const probe = opts.revisionProbe;
    this.#revision = probe ? new CoalescedProbe(() => probe().catch(() => undefined)) : undefined;
    this.#fresh = new FreshWaiters(this.#clock);
    this.#compaction = opts.compaction;
    this.#bookmarks = new BookmarkLines(opts.resource);
    this.#cacher = new Cacher({
      state: {
        resource: this.resource,
        store: this.#store,
        history: this.#history,
        ready: this.#ready,
        bookmarks: this.#bookmarks,
        resourceVersion: () => this.#rv,
      },
      clock: this.#clock,
      logger: this.#logger,
      bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60_000,
      watcherBufferEvents: opts.watcherBufferEvents ?? 1000,
      watcherBufferBytes: opts.watcherBufferBytes ?? 16 * 1024 * 1024,
      parkedWatchers: opts.parkedWatchers ?? new ParkedWatchers(),
      onEventDispatched: opts.onEventDispatched,
      onWatcherTerminated: opts.onWatcherTerminated,
      onWatcherParked: opts.onWatcherParked,
      onWatcherResumed: opts.onWatcherResumed,
    });
  }

  // ---- state and "wait until fresh" ----

  /** True after the first complete snapshot (`replace`). */
  isSynced(): boolean {
    return this.#ready.synced;
  }

  /** Resolves true once synced, false after `timeoutMs` or when `signal` aborts. */
  waitSynced(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.#ready.synced) return Promise.resolve(true);
    return this.#fresh.wait(-1n, timeoutMs, signal);
  }

  /** What the Reflector last said about the upstream stream's liveness. */
  isLive(): boolean {
    return this.#live;
  }

  /** The current RV; 0n before the first snapshot. */
  resourceVersion(): bigint {
    return this.#rv;
  }

  /**
   * Resolves true once the cache is synced with RV ≥ `rv` (apiserver `waitUntilFreshAndBlock`),
   * false after `timeoutMs` or when `signal` aborts.
   */
  waitUntilFresh(rv: bigint, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.#ready.synced && this.#rv >= rv) return Promise.resolve(true);
    return this.#fresh.wait(rv, timeoutMs, signal);
  }

  /**
   * The upstream's current revision, learnt by a request sent after this call (shared with the
   * concurrent callers that arrived before it was sent); undefined when it could not be learnt
   * or the cache has no revision probe. `signal` only stops this caller's wait.
   */
  upstreamRevision(signal?: AbortSignal): Promise<bigint | undefined> {
    if (!this.#revision) return Promise.resolve(undefined);
    return untilAborted(this.#revision.next(), undefined, signal);
  }

  /**
   * True when the upstream shows no event of the resource in (from, to] (reflector/gap-proof.ts),
   * sharing a proof in flight that covers the range; false without a gap prover.
   */
  proveNoEventsBetween(from: bigint, to: bigint, signal?: AbortSignal): Promise<boolean> {
    return this.#gapProofs.prove(from, to, signal);
  }

  /**
   * Whether etcd has compacted `rv` as far as the upstream has shown (compaction-floor.ts): an
   * Exact or continue read at it goes upstream, which answers 410. May wait (bounded) for one
   * upstream probe when the floor is stale. Resolves false without a compaction probe.
   */
  compactedAt(rv: bigint, signal?: AbortSignal): Promise<boolean> {
    return this.#compaction ? this.#compaction.compacted(rv, signal) : Promise.resolve(false);
  }

  /** The RVs an Exact or continue read is served at, [window start, current]; undefined before the first snapshot. */
  servedWindow(): ServedWindow | undefined {
    return this.#ready.synced ? { start: this.#history.start, current: this.#rv } : undefined;
  }

  /** Wakes the waits the current RV satisfies; none before the first snapshot (-1n waits for it). */
  #wakeWaiters(): void {
    if (this.#ready.synced) this.#fresh.wake(this.#rv);
  }

  stats(): WatchCacheStats {
    const oldest = this.#history.oldest();
    return {
      restoredFromMs: this.#restoredFrom,
      objects: this.#store.size,
      bytes: this.#store.bytes,
      historyEvents: this.#history.length,
      historyBytes: this.#history.bytes,
      oldestRV: String(this.#history.start),
      currentRV: String(this.#rv),
      watchers: this.#cacher.watchers,
      synced: this.#ready.synced,
      live: this.#live,
      oldestEventAgeMs: oldest ? this.#clock.now() - oldest.at : 0,
      oldestEventTimeMs: oldest ? oldest.at : null,
      historyCapacity: this.#historyMaxEvents,
      lastSyncTimeMs: this.#lastSyncTimeMs,
      lastProgressTimeMs: this.#lastProgressTimeMs,
      terminatedWatchers: this.#cacher.terminatedWatchers,
      parkedWatchers: this.#cacher.parkedWatchers,
    };
  }

  // ---- CacheSink (the Reflector's side) ----

  /**
   * The entry of a snapshot object, built as it arrives (CacheSink.compact): the entry itself (bytes
   * and metadata only), so the parsed object dies young; `replace` stores it as it is. Throws what
   * {@link Store.entry} throws (an RV that is not a uint64), as `replace` would.
   */
  compact(obj: UpstreamObject): UpstreamObject {
    return this.#store.entry(obj);
  }

  /**
   * Stores a new snapshot at `resourceVersion`. Atomic: every entry is built (its RV, labels and
   * fields parsed) before anything changes, as watch_cache.go `Replace` builds `toReplace` before
   * `store.Replace`, so an object that throws leaves the previous store, window, watchers and
   * synced flag as they were (the Reflector then retries).
   * A relist that lands on the cache's own RV, or on a later one with exactly the stored objects
   * (each at the same RV: nothing changed in between, e.g. an apiserver restart while the resource
   * was quiet), is the same state: the watchers and the window are kept and the RV advances as
   * with a bookmark (no needless 410s downstream); the store keeps its entries.
   * @throws ResourceVersionError when `resourceVersion` or an object's RV is not a uint64.
   */
  replace(objects: UpstreamObject[], resourceVersion: string, bookmarkObject?: Buffer): void {
    const rv = parseRV(resourceVersion);
    const entries = objects.map((o) => (o instanceof StoreEntry ? o : this.#store.entry(o)));
    if (bookmarkObject) this.#bookmarks.learn(bookmarkObject, resourceVersion);
    const wasSynced = this.#ready.synced;
    const sameState = wasSynced && (rv === this.#rv || (rv > this.#rv && this.#store.holdsExactly(entries)));
    if (sameState) {
      // The store keeps its entries: the new ones' slab bytes are free again.
      for (const e of entries) if (this.#store.get(e.key) !== e) e.release();
      this.#rv = rv;
    } else {
      // Relist: open watchers cannot be told what changed between the old and new snapshot with
      // distinct increasing RVs, so they end cleanly and resume (cacher.go terminateAllWatchers).
      this.#cacher.terminateAll('relist');
      this.#store.replaceAll(entries);
      this.#history.reset(rv);
      this.#rv = rv;
    }
    this.#ready.set();
    this.#lastSyncTimeMs = this.#clock.now();
    this.#logger?.debug(
      {
        resource: this.resource.gvr.resource,
        objects: objects.length,
        rv: resourceVersion,
        relist: wasSynced,
        sameRV: sameState,
      },
      'watch cache replaced',
    );
    this.#wakeWaiters();
  }

  add(obj: UpstreamObject): void {
    this.#apply('ADDED', obj);
  }

  update(obj: UpstreamObject): void {
    this.#apply('MODIFIED', obj);
  }

  delete(obj: UpstreamObject): void {
    this.#apply('DELETED', obj);
  }

  bookmark(resourceVersion: string, object?: Buffer): void {
    const rv = parseRV(resourceVersion);
    if (object) this.#bookmarks.learn(object, resourceVersion);
    this.#lastProgressTimeMs = this.#clock.now();
    if (rv <= this.#rv) return;
    this.#rv = rv;
    this.#wakeWaiters();
  }

  setLive(live: boolean): void {
    this.#live = live;
    // The upstream accepted a watch from the cache's RV (or sent news): no longer just a snapshot.
    if (live) this.#restoredFrom = null;
  }

  /**
   * The cache as it is now, for a snapshot file (references only, O(objects + events)); undefined
   * before the first snapshot.
   */
  capture(): CacheCapture | undefined {
    if (!this.#ready.synced) return undefined;
    const start = this.#history.start;
    return {
      resourceVersion: this.#rv,
      windowStart: start,
      entries: [...this.#store.values()],
      events: this.#history.since(start),
    };
  }

  /**
   * Fills a cache that never synced with a saved state (docs/design.md §3, warm restart): synced
   * but not live, its window starting where the saved one did. Until the upstream proves it
   * (`setLive(true)`), Exact and continue reads are refused (410: the server passes them upstream)
   * and consistent reads go upstream as for any cache that is not live. `takenAtMs`: when the
   * state was saved. @throws ResourceVersionError (the state does not add up; nothing changed)
   * or Error when the cache already synced.
   */
  restore(s: RestoredCache, takenAtMs: number): void {
    if (this.#ready.synced) throw new Error(`${this.resource.gvr.resource}: restore into a synced cache`);
    const { entries, events } = restoredEntries(this.#store, s);
    this.#store.replaceAll(entries);
    // The downtime does not age the restored window (history.ts `restore`): a client that held
    // an RV of it when the old process stopped may resume once it reconnects.
    this.#history.restore(s.windowStart, events, this.#clock.now() - takenAtMs);
    this.#rv = s.resourceVersion;
    this.#restoredFrom = takenAtMs;
    this.#live = false;
    this.#ready.set();
    this.#lastSyncTimeMs = this.#clock.now();
    this.#wakeWaiters();
  }

  #apply(type: ChangeType, obj: UpstreamObject): void {
    const entry = this.#store.entry(obj);
    this.#lastProgressTimeMs = this.#clock.now();
    if (!this.#ready.synced) {
      this.#logger?.warn(
        { resource: this.resource.gvr.resource, type },
        'event before the first snapshot dropped',
      );
      entry.release();
      return;
    }
    if (entry.rv <= this.#rv) {
      // The Reflector guarantees increasing RVs; a duplicate would break resume-by-RV.
      this.#logger?.warn(
        { resource: this.resource.gvr.resource, type, rv: String(entry.rv), current: String(this.#rv) },
        'event with a non-increasing resourceVersion dropped',
      );
      entry.release();
      return;
    }
    const prev = type === 'DELETED' ? this.#store.remove(entry.key) : this.#store.put(entry);
    const event = new HistoryEvent(type, entry, prev, this.#clock.now());
    this.#history.append(event, this.#clock.now());
    this.#rv = entry.rv;
    this.#cacher.dispatch(event);
    this.#wakeWaiters();
  }

  // ---- reads (the server's side), served by the cacher ----

  /**
   * Objects matching `q` in key order, at the current RV, or at `q.exactRV` (or the RV of
   * `q.continueFrom`) when it lies in the window [start, current] — rebuilt by undoing the newer
   * history events. With `q.limit`, one page and the token continuing it; `remainingItemCount`
   * only when no selector filters (as the apiserver: the count is exact only then).
   * @throws StatusError 429 before the first snapshot; 410 Expired when the RV asked for is
   *   outside the window (below it, or above the current RV) — the caller then forwards upstream.
   */
  list(q: ListRequest): ListResult {
    const at = q.exactRV ?? q.continueFrom?.rv;
    if (this.#restoredFrom !== null && at !== undefined) throw tooOldResourceVersion(at, this.#rv + 1n);
    return this.#cacher.list(q);
  }

  /**
   * One object (its `wire` bytes WITH kind/apiVersion, as a GET answer), or undefined when absent.
   * @throws StatusError 429 before the first snapshot.
   */
  get(namespace: string | undefined, name: string): StoreEntry | undefined {
    return this.#cacher.get(namespace, name);
  }

  /**
   * Starts a watch (see {@link WatchRequest}). An RV below the window yields a watcher whose
   * stream holds one ERROR event (410 Expired "too old resource version: N (start)") and ends,
   * as the apiserver answers such a watch with HTTP 200. An RV above the current one is
   * accepted and only events after it are sent.
   * @throws StatusError 429 "storage is (re)initializing" before the first snapshot (the caller
   *   waits with {@link waitSynced} or passes the request upstream).
   */
  watch(q: WatchRequest): CacheWatcher {
    return this.#cacher.watch(q);
  }

  /**
   * Before a watch resuming at `rv`: when `rv` is below the window and the cache has a gap
   * prover, asks the upstream (window-extension.ts) and lowers the window's start to `rv` when
   * it proves the resource unchanged since. Resolves true when `rv` is (now) inside the window.
   */
  extendWindowBack(rv: bigint, signal?: AbortSignal): Promise<boolean> {
    if (!this.#ready.synced) return Promise.resolve(false);
    if (rv >= this.#history.start) return Promise.resolve(true);
    if (!this.#extender) return Promise.resolve(false);
    return this.#extender.extend(rv, signal);
  }

  /** Ends every watcher (SIGTERM) and stops their timers. Reads stay possible. */
  close(): void {
    this.#cacher.terminateAll('shutdown');
    this.#ready.stop();
    this.#compaction?.stop();
  }
}
