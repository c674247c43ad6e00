/**
 * The watch cache of one resource: apiserver `storage/cacher/watch_cache.go` (store + ring of
 * recent events + current RV + "wait until fresh") together with the dispatch half of
 * `cacher.go` (fan-out of each event to the watchers, periodic bookmarks, ending every watcher
 * when the store is re-initialised) and `ready.go` (not serving until the first snapshot).
 *
 * It is the {@link CacheSink} the Reflector fills. All calls are synchronous on the event loop,
 * so a LIST or a new WATCH always sees a consistent (store, history, RV) triple.
 */
import type { Logger } from 'pino';
import { type ContinueToken, encodeContinue } from '../apimachinery/continue-token.ts';
import type { FieldSelector } from '../apimachinery/field-selector.ts';
import { encodeStatus } from '../apimachinery/go-json.ts';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import type { LabelSelector } from '../apimachinery/label-selector.ts';
import type { UpstreamObject } from '../apimachinery/object.ts';
import { type StatusError, tooManyRequests, tooOldResourceVersion } from '../apimachinery/status.ts';
import { eventLine } from '../apimachinery/watch-event.ts';
import type { CacheSink } from '../reflector/cache-sink.ts';
import { type Clock, realClock, type TimerHandle } from '../util/clock.ts';
import { type CacheWatcher, type CloseReason, Watcher } from './cache-watcher.ts';
import { type BookmarkShape, bookmarkObject, type ListResult, learnBookmarkShape } from './encoding.ts';
import { type ChangeType, History, HistoryEvent } from './history.ts';
import { compareKeys, objectKey, parseRV, Store, type StoreEntry } from './store.ts';

export { type ContinueToken, decodeContinue, encodeContinue } from '../apimachinery/continue-token.ts';
export type { CacheWatcher, CloseReason } from './cache-watcher.ts';
export { encodeList, type ListResult } from './encoding.ts';

/** Construction options of a {@link WatchCache}. */
export interface WatchCacheOptions {
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
  /** Hard cap on history bytes (event lines + replaced objects). Default 64 MiB. */
  historyMaxBytes?: number;
  /** Live events a watcher may have waiting before it is closed. Default 1 000. */
  watcherBufferEvents?: number;
  /**
   * Bytes of live events a watcher may have waiting before it is closed. Default 16 MiB, so
   * clients that stop reading cannot pin more than that (each) beyond the history's cap.
   */
  watcherBufferBytes?: number;
  /** Period of BOOKMARKs to watchers that allow them. ms, default 60 000 (apiserver `bookmarkFrequency`). */
  bookmarkIntervalMs?: number;
  /**
   * Called once per change handed to the fan-out, whatever the number of watchers
   * (`apiserver_watch_cache_events_dispatched_total`). Must be cheap.
   */
  onEventDispatched?: () => void;
  /** Called when a watcher is closed for not keeping up (`apiserver_terminated_watchers_total`). */
  onWatcherTerminated?: () => void;
}

/** A LIST from the cache. `namespace` undefined = all namespaces (or a cluster-scoped resource). */
export interface ListRequest {
  namespace?: string;
  labelSelector: LabelSelector;
  fieldSelector: FieldSelector;
  /** resourceVersionMatch=Exact: the snapshot AT this RV. */
  exactRV?: bigint;
  /** Page size (`limit`); unset or 0 = everything. */
  limit?: number;
  /**
   * A decoded `continue` token ({@link decodeContinue}): the page starting at its key, from
   * the snapshot at its RV (which must still be inside the window; else 410 like `exactRV`).
   */
  continueFrom?: ContinueToken;
}

/** A WATCH from the cache. */
export interface WatchRequest {
  namespace?: string;
  labelSelector: LabelSelector;
  fieldSelector: FieldSelector;
  /**
   * undefined or 0n: from now, preceded by synthetic ADDED events for the (filtered) snapshot
   * (unless `sendInitialEvents` is false). N: every event with RV > N, then live.
   */
  resourceVersion?: bigint;
  /**
   * true: ADDED for the snapshot, then a BOOKMARK annotated `k8s.io/initial-events-end`, then
   * live (KEP-3157). The caller first waits for the cache to reach `resourceVersion`
   * (NotOlderThan); the snapshot served is the current one. false: no initial events.
   */
  sendInitialEvents?: boolean;
  /** Periodic BOOKMARKs carrying the current RV. */
  allowWatchBookmarks?: boolean;
  /**
   * The watch's timeout (`timeoutSeconds` × 1000, or the server's jittered default), ms. When
   * set, the watcher ends cleanly (reason `timeout`) after it, and a bookmark is sent 2 s before
   * so the client resumes from a fresh RV (cache_watcher.go `nextBookmarkTime`).
   */
  timeoutMs?: number;
}

/** Snapshot of the cache's state for metrics and `/debug/cache`. */
export interface WatchCacheStats {
  objects: number;
  bytes: number;
  historyEvents: number;
  historyBytes: number;
  /** Window start: the oldest RV a watch may resume from. */
  oldestRV: string;
  currentRV: string;
  watchers: number;
  synced: boolean;
  live: boolean;
  /** Age of the oldest buffered event, ms (0 when none). */
  oldestEventAgeMs: number;
  /** When the oldest buffered event was recorded, ms since the epoch; null when none. */
  oldestEventTimeMs: number | null;
  /** The history's hard cap on events (the ring grows up to it; `historyMaxEvents`). */
  historyCapacity: number;
  /** When the last snapshot was stored (`replace`), ms since the epoch; null before. */
  lastSyncTimeMs: number | null;
  /** When the last event or bookmark arrived, ms since the epoch; null before. */
  lastProgressTimeMs: number | null;
  /** Watchers closed so far for not keeping up (buffer full). */
  terminatedWatchers: number;
}

interface Waiter {
  rv: bigint;
  resolve: (ok: boolean) => void;
}

/** The apiserver's answer while its cache is not ready (`ready.go`: 429, retry after 1 s). */
function notReady(): StatusError {
  return tooManyRequests('storage is (re)initializing', 1);
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
  readonly #watcherBufferEvents: number;
  readonly #watcherBufferBytes: number;
  readonly #bookmarkIntervalMs: number;
  /** Every open watcher; and the same split by the namespace it watches ("" = all). */
  readonly #watchers = new Set<Watcher>();
  readonly #watchersByNs = new Map<string, Set<Watcher>>();
  #rv = 0n;
  #synced = false;
  #live = false;
  readonly #waiters = new Set<Waiter>();
  #bookmarkLine: { rv: bigint; line: Buffer } | undefined;
  readonly #historyMaxEvents: number;
  readonly #onEventDispatched: (() => void) | undefined;
  readonly #onWatcherTerminated: (() => void) | undefined;
  #lastSyncTimeMs: number | null = null;
  #lastProgressTimeMs: number | null = null;
  #terminatedWatchers = 0;
  #bookmarkShape: BookmarkShape = {};

  constructor(opts: WatchCacheOptions) {
    this.resource = opts.resource;
    this.#clock = opts.clock ?? realClock;
    this.#logger = opts.logger;
    this.#store = new Store(opts.resource);
    this.#historyMaxEvents = opts.historyMaxEvents ?? 102_400;
    this.#onEventDispatched = opts.onEventDispatched;
    this.#onWatcherTerminated = opts.onWatcherTerminated;
    this.#history = new History({
      minAgeMs: opts.historyMinAgeMs ?? 75_000,
      minEvents: opts.historyMinEvents ?? 100,
      maxEvents: this.#historyMaxEvents,
      maxBytes: opts.historyMaxBytes ?? 64 * 1024 * 1024,
    });
    this.#watcherBufferEvents = opts.watcherBufferEvents ?? 1000;
    this.#watcherBufferBytes = opts.watcherBufferBytes ?? 16 * 1024 * 1024;
    this.#bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 60_000;
  }

  // ---- state ----

  /** True after the first complete snapshot (`replace`). */
  isSynced(): boolean {
    return this.#synced;
  }

  /** Resolves true once synced, false after `timeoutMs` or when `signal` aborts. */
  waitSynced(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.#synced) return Promise.resolve(true);
    return this.#wait(-1n, timeoutMs, signal);
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
    if (this.#synced && this.#rv >= rv) return Promise.resolve(true);
    return this.#wait(rv, timeoutMs, signal);
  }

  /** `rv` = -1n waits for the sync only. */
  #wait(rv: bigint, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let timer: TimerHandle | undefined;
      const done = (ok: boolean) => {
        if (timer !== undefined) this.#clock.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiters.delete(waiter);
        resolve(ok);
      };
      const onAbort = () => done(false);
      const waiter: Waiter = { rv, resolve: done };
      this.#waiters.add(waiter);
      timer = this.#clock.setTimeout(() => done(false), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #wakeWaiters(): void {
    if (!this.#synced || this.#waiters.size === 0) return;
    for (const w of [...this.#waiters]) if (this.#rv >= w.rv) w.resolve(true);
  }

  stats(): WatchCacheStats {
    const oldest = this.#history.oldest();
    return {
      objects: this.#store.size,
      bytes: this.#store.bytes,
      historyEvents: this.#history.length,
      historyBytes: this.#history.bytes,
      oldestRV: String(this.#history.start),
      currentRV: String(this.#rv),
      watchers: this.#watchers.size,
      synced: this.#synced,
      live: this.#live,
      oldestEventAgeMs: oldest ? this.#clock.now() - oldest.at : 0,
      oldestEventTimeMs: oldest ? oldest.at : null,
      historyCapacity: this.#historyMaxEvents,
      lastSyncTimeMs: this.#lastSyncTimeMs,
      lastProgressTimeMs: this.#lastProgressTimeMs,
      terminatedWatchers: this.#terminatedWatchers,
    };
  }

  // ---- CacheSink (the Reflector's side) ----

  replace(objects: UpstreamObject[], resourceVersion: string, bookmarkObject?: Buffer): void {
    const rv = parseRV(resourceVersion);
    if (bookmarkObject) this.#learnBookmark(bookmarkObject, resourceVersion);
    const wasSynced = this.#synced;
    // Relist: open watchers cannot be told what changed between the old and new snapshot with
    // distinct increasing RVs, so they end cleanly and resume (cacher.go terminateAllWatchers).
    this.#endAll('relist');
    this.#store.clear();
    for (const o of objects) this.#store.put(this.#store.entry(o));
    this.#history.reset(rv);
    this.#rv = rv;
    this.#synced = true;
    this.#lastSyncTimeMs = this.#clock.now();
    this.#logger?.debug(
      {
        resource: this.resource.gvr.resource,
        objects: objects.length,
        rv: resourceVersion,
        relist: wasSynced,
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
    if (object) this.#learnBookmark(object, resourceVersion);
    this.#lastProgressTimeMs = this.#clock.now();
    if (rv <= this.#rv) return;
    this.#rv = rv;
    this.#wakeWaiters();
  }

  /** Keeps the first shape learnt for each variant (they never change for a kind). */
  #learnBookmark(object: Buffer, rv: string): void {
    if (this.#bookmarkShape.plain && this.#bookmarkShape.end) return;
    const shape = learnBookmarkShape(this.resource, object, rv);
    if (!shape) return;
    this.#bookmarkShape = {
      plain: this.#bookmarkShape.plain ?? shape.plain,
      end: this.#bookmarkShape.end ?? shape.end,
    };
    this.#bookmarkLine = undefined;
  }

  setLive(live: boolean): void {
    this.#live = live;
  }

  #apply(type: ChangeType, obj: UpstreamObject): void {
    const entry = this.#store.entry(obj);
    this.#lastProgressTimeMs = this.#clock.now();
    if (!this.#synced) {
      this.#logger?.warn(
        { resource: this.resource.gvr.resource, type },
        'event before the first snapshot dropped',
      );
      return;
    }
    if (entry.rv <= this.#rv) {
      // The Reflector guarantees increasing RVs; a duplicate would break resume-by-RV.
      this.#logger?.warn(
        { resource: this.resource.gvr.resource, type, rv: String(entry.rv), current: String(this.#rv) },
        'event with a non-increasing resourceVersion dropped',
      );
      return;
    }
    const prev = type === 'DELETED' ? this.#store.remove(entry.key) : this.#store.put(entry);
    const event = new HistoryEvent(type, entry, prev, this.#clock.now());
    this.#history.append(event, this.#clock.now());
    this.#rv = entry.rv;
    // Like the cacher's namespace trigger: only watchers of this namespace or of all namespaces.
    const all = this.#watchersByNs.get('');
    if (all) for (const w of all) w.deliver(event);
    const own = entry.namespace ? this.#watchersByNs.get(entry.namespace) : undefined;
    if (own) for (const w of own) w.deliver(event);
    this.#onEventDispatched?.();
    this.#wakeWaiters();
  }

  // ---- reads (the server's side) ----

  /**
   * Objects matching `q` in key order, at the current RV, or at `q.exactRV` (or the RV of
   * `q.continueFrom`) when it lies in the window [start, current] — rebuilt by undoing the newer
   * history events. With `q.limit`, one page and the token continuing it; `remainingItemCount`
   * only when no selector filters (as the apiserver: the count is exact only then).
   * @throws StatusError 429 before the first snapshot; 410 Expired when the RV asked for is
   *   outside the window (below it, or above the current RV) — the caller then forwards upstream.
   */
  list(q: ListRequest): ListResult {
    if (!this.#synced) throw notReady();
    const ns = this.resource.namespaced ? q.namespace : undefined;
    const picked: StoreEntry[] = [];
    const start = q.continueFrom?.start;
    // Keys in a continue token are relative to the listed prefix: the name within a namespace.
    const rel = (e: StoreEntry) => (ns !== undefined ? e.name : e.key);
    const wanted = (e: StoreEntry) =>
      (ns === undefined || e.namespace === ns) &&
      (start === undefined || rel(e) >= start) &&
      e.matches(q.labelSelector, q.fieldSelector);
    const at = q.continueFrom?.rv ?? q.exactRV;
    let rv = this.#rv;
    if (at !== undefined && at !== this.#rv) {
      if (at < this.#history.start || at > this.#rv) throw tooOldResourceVersion(at, this.#history.start);
      rv = at;
      // The state at rv: for each key changed after rv, its value before the oldest such change.
      const undo = new Map<string, StoreEntry | null>();
      for (const e of this.#history.newestFirstAfter(rv)) undo.set(e.cur.key, e.prev ?? null);
      const c = this.#store.candidates(ns, q.fieldSelector);
      for (const e of c.entries) if (!undo.has(e.key) && wanted(e)) picked.push(e);
      for (const e of undo.values()) if (e && wanted(e)) picked.push(e);
      picked.sort(byKey);
    } else {
      const c = this.#store.candidates(ns, q.fieldSelector);
      for (const e of c.entries) if (wanted(e)) picked.push(e);
      if (!c.sorted) picked.sort(byKey);
    }
    const result: ListResult = { resourceVersion: String(rv), items: [] };
    let page = picked;
    if (q.limit && q.limit > 0 && picked.length > q.limit) {
      page = picked.slice(0, q.limit);
      result.continue = encodeContinue(rel(page[page.length - 1]!), rv);
      if (q.labelSelector.empty && q.fieldSelector.empty) result.remainingItemCount = picked.length - q.limit;
    }
    result.items = page.map((e) => e.listItem);
    return result;
  }

  /**
   * One object (bytes WITH kind/apiVersion, as a GET answer), or undefined when absent.
   * @throws StatusError 429 before the first snapshot.
   */
  get(namespace: string | undefined, name: string): UpstreamObject | undefined {
    if (!this.#synced) throw notReady();
    return this.#store.get(objectKey(this.resource.namespaced ? namespace : undefined, name))?.obj;
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
    if (!this.#synced) throw notReady();
    const ns = this.resource.namespaced ? q.namespace : undefined;
    const { labelSelector, fieldSelector } = q;
    const filter = (e: StoreEntry) =>
      (ns === undefined || e.namespace === ns) && e.matches(labelSelector, fieldSelector);
    const current = this.#rv;
    const requested = q.resourceVersion ?? 0n;
    let initial: Iterator<Buffer> | undefined;
    let minRV = current;

    if (q.sendInitialEvents === true) {
      initial = this.#snapshotLines(ns, filter, fieldSelector, this.#bookmarkBytes(current, true));
    } else if (requested === 0n) {
      if (q.sendInitialEvents !== false) initial = this.#snapshotLines(ns, filter, fieldSelector, undefined);
    } else if (requested < this.#history.start) {
      const w = new Watcher({ minRV: current, filter, bufferEvents: 1 });
      const status = tooOldResourceVersion(requested, this.#history.start).status;
      w.end('expired', eventLine('ERROR', encodeStatus(status)));
      return w;
    } else if (requested >= current) {
      minRV = requested;
    } else {
      initial = historyLines(this.#history.since(requested), filter);
    }

    const nsKey = ns ?? '';
    const w = new Watcher({
      initial,
      minRV,
      filter,
      bufferEvents: this.#watcherBufferEvents,
      bufferBytes: this.#watcherBufferBytes,
      onClose: (closed, reason) => this.#unregister(closed, nsKey, reason),
    });
    this.#watchers.add(w);
    let bucket = this.#watchersByNs.get(nsKey);
    if (!bucket) {
      bucket = new Set();
      this.#watchersByNs.set(nsKey, bucket);
    }
    bucket.add(w);
    const deadline = q.timeoutMs !== undefined ? this.#clock.now() + q.timeoutMs : undefined;
    const timers: TimerHandle[] = [];
    w.cleanup = () => {
      for (const t of timers) this.#clock.clearTimeout(t);
    };
    if (deadline !== undefined) timers.push(this.#clock.setTimeout(() => w.end('timeout'), q.timeoutMs!));
    if (q.allowWatchBookmarks) this.#scheduleBookmark(w, deadline, timers);
    return w;
  }

  /** Ends every watcher (SIGTERM) and stops their timers. Reads stay possible. */
  close(): void {
    this.#endAll('shutdown');
  }

  #endAll(reason: CloseReason): void {
    for (const w of [...this.#watchers]) w.end(reason);
    this.#watchers.clear();
    this.#watchersByNs.clear();
  }

  #unregister(w: Watcher, nsKey: string, reason: CloseReason): void {
    this.#watchers.delete(w);
    const bucket = this.#watchersByNs.get(nsKey);
    bucket?.delete(w);
    if (bucket?.size === 0) this.#watchersByNs.delete(nsKey);
    if (reason === 'overflow') {
      this.#terminatedWatchers++;
      this.#onWatcherTerminated?.();
      this.#logger?.info(
        { resource: this.resource.gvr.resource },
        'watcher closed: buffer full (client too slow)',
      );
    }
  }

  /**
   * The next bookmark of `w`: every bookmarkIntervalMs, or 2 s before its deadline when that
   * comes first; none once the pre-deadline moment has passed (cache_watcher.go
   * `nextBookmarkTime`). `timers` holds the watcher's live timer handles.
   */
  #scheduleBookmark(w: Watcher, deadline: number | undefined, timers: TimerHandle[]): void {
    const now = this.#clock.now();
    let at = now + this.#bookmarkIntervalMs;
    if (deadline !== undefined && deadline - 2000 < at) at = deadline - 2000;
    if (at < now) return;
    const handle = this.#clock.setTimeout(() => {
      timers.splice(timers.indexOf(handle), 1);
      if (w.closed) return;
      w.bookmark(this.#rv, this.#periodicBookmarkLine(this.#rv));
      if (!w.closed && (deadline === undefined || at < deadline - 2000))
        this.#scheduleBookmark(w, deadline, timers);
    }, at - now);
    timers.push(handle);
  }

  /** The periodic bookmark line at `rv`, encoded once per RV for all watchers. */
  #periodicBookmarkLine(rv: bigint): Buffer {
    if (this.#bookmarkLine?.rv !== rv) this.#bookmarkLine = { rv, line: this.#bookmarkBytes(rv, false) };
    return this.#bookmarkLine.line;
  }

  #bookmarkBytes(rv: bigint, initialEventsEnd: boolean): Buffer {
    const learnt = initialEventsEnd ? this.#bookmarkShape.end : this.#bookmarkShape.plain;
    const object = learnt
      ? Buffer.from(`${learnt[0]}${rv}${learnt[1]}`)
      : bookmarkObject(this.resource, rv, initialEventsEnd);
    return eventLine('BOOKMARK', object);
  }

  /** Synthetic ADDED lines for the matching snapshot (captured now, encoded lazily), then `end`. */
  #snapshotLines(
    ns: string | undefined,
    filter: (e: StoreEntry) => boolean,
    field: FieldSelector,
    end: Buffer | undefined,
  ): Iterator<Buffer> {
    const entries: StoreEntry[] = [];
    const c = this.#store.candidates(ns, field);
    for (const e of c.entries) if (filter(e)) entries.push(e);
    if (!c.sorted) entries.sort(byKey);
    return (function* () {
      for (const e of entries) yield eventLine('ADDED', e.obj.raw);
      if (end) yield end;
    })();
  }
}

function* historyLines(events: HistoryEvent[], filter: (e: StoreEntry) => boolean): Generator<Buffer> {
  for (const e of events) {
    const line = e.lineFor(filter);
    if (line) yield line;
  }
}

function byKey(a: StoreEntry, b: StoreEntry): number {
  return compareKeys(a.key, b.key);
}
