/**
 * The serving half of one resource's cache: apiserver `storage/cacher/cacher.go` — LIST and GET
 * answered from the watch cache's state (`GetList` with its paging and continue tokens, `Get`),
 * WATCH (`Watch`: choose the initial interval, register a `cacheWatcher`), the fan-out of each
 * change to the watchers of its namespace (`dispatchEvent` with the namespace trigger) and
 * `terminateAllWatchers` on a relist or shutdown. The state it reads (store, history window,
 * current RV, readiness) is owned by `WatchCache` and changes only between its calls.
 */
import type { Logger } from 'pino';
import type { MetadataVersion } from '../apimachinery/accept.ts';
import { type ContinueToken, encodeContinue } from '../apimachinery/continue-token.ts';
import type { FieldSelector } from '../apimachinery/field-selector.ts';
import { encodeStatus } from '../apimachinery/go-json.ts';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import type { LabelSelector } from '../apimachinery/label-selector.ts';
import type { ShardSelector } from '../apimachinery/shard-selector.ts';
import { tooOldResourceVersion } from '../apimachinery/status.ts';
import { eventLine, type WireLine } from '../apimachinery/watch-event.ts';
import type { Clock } from '../util/clock.ts';
import { BookmarkTimer } from './bookmark-timer.ts';
import {
  type CacheWatcher,
  type CloseReason,
  type ParkingOptions,
  type TerminationReason,
  Watcher,
} from './cache-watcher.ts';
import type { BookmarkLines, ListResult } from './encoding.ts';
import { EntryItems } from './entry-items.ts';
import type { History, HistoryEvent } from './history.ts';
import type { ParkedWatchers } from './parked-watchers.ts';
import type { Ready } from './ready.ts';
import type { Store, StoreEntry } from './store.ts';
import {
  firstFrom,
  historyLines,
  PageSnapshots,
  type Selection,
  selectionKey,
  snapshotAt,
  snapshotLines,
} from './watch-cache-interval.ts';

/** A LIST from the cache. `namespace` undefined = all namespaces (or a cluster-scoped resource). */
export interface ListRequest {
  namespace?: string;
  labelSelector: LabelSelector;
  fieldSelector: FieldSelector;
  /**
   * `shardSelector`: only the objects whose uid (or namespace) hash is in one of its ranges
   * (apiserver cacher.go: `MatchesSharding` before the label and field selectors).
   */
  shardSelector?: ShardSelector;
  /** resourceVersionMatch=Exact: the snapshot AT this RV. */
  exactRV?: bigint;
  /** Page size (`limit`); unset or 0 = everything. */
  limit?: number;
  /**
   * A decoded `continue` token (`decodeContinue`): the page starting at its key, from the
   * snapshot at its RV (which must still be inside the window; else 410 like `exactRV`).
   */
  continueFrom?: ContinueToken;
  /**
   * A PartialObjectMetadataList read (issue 15): `items` then address each object's `metadata`
   * value in the stored bytes for `encodeMetadataList`, not the objects.
   */
  metadata?: MetadataVersion;
}

/** A WATCH from the cache. */
export interface WatchRequest {
  namespace?: string;
  labelSelector: LabelSelector;
  fieldSelector: FieldSelector;
  /**
   * `shardSelector`: only the objects whose uid (or namespace) hash is in one of its ranges
   * (apiserver cacher.go: `MatchesSharding` before the label and field selectors).
   */
  shardSelector?: ShardSelector;
  /**
   * undefined or 0n: from now, preceded by synthetic ADDED events for the (filtered) snapshot
   * (unless `sendInitialEvents` is false). N: every event with RV > N, then live.
   */
  resourceVersion?: bigint;
  /**
   * true: ADDED for the snapshot, then (only with `allowWatchBookmarks`) a BOOKMARK annotated
   * `k8s.io/initial-events-end`, then live (KEP-3157). The caller first waits for the cache to reach `resourceVersion`
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
  /**
   * A metadata watch (`as=PartialObjectMetadata`, issue 15): every event, initial ones and
   * bookmarks included, carries the object's PartialObjectMetadata in `meta.k8s.io/<version>`.
   */
  metadata?: MetadataVersion;
}

/** The watch cache's state as the cacher reads it (owned and changed by `WatchCache` only). */
export interface CacheState {
  readonly resource: ResourceInfo;
  readonly store: Store;
  readonly history: History;
  readonly ready: Ready;
  readonly bookmarks: BookmarkLines;
  /** The current RV. */
  resourceVersion(): bigint;
}

/** What the fan-out reports (the ops layer's counters); each must be cheap. */
export interface FanOutHooks {
  /** Called once per change handed to the fan-out, whatever the number of watchers. */
  onEventDispatched?: (() => void) | undefined;
  /** Called when the cache ends a watcher for cause (`apiserver_terminated_watchers_total{reason}`). */
  onWatcherTerminated?: ((reason: TerminationReason) => void) | undefined;
  /** Called when a watcher is parked (`apiserver_watch_cache_watcher_stalls_total`). */
  onWatcherParked?: (() => void) | undefined;
  /**
   * Called when a parked watcher caught up (`apiserver_watch_cache_watcher_catchup_rounds_total`),
   * with the number of history events its catch-up sent (`…_watcher_catchup_events`).
   */
  onWatcherResumed?: ((catchupEvents: number) => void) | undefined;
}

/** Construction options of a {@link Cacher}. */
export interface CacherOptions extends FanOutHooks {
  state: CacheState;
  clock: Clock;
  logger?: Logger | undefined;
  /** Period of BOOKMARKs, ms. */
  bookmarkIntervalMs: number;
  /** Live events a watcher may have waiting before it is parked (or closed). */
  watcherBufferEvents: number;
  /** Bytes of live events a watcher may have waiting before it is parked (or closed). */
  watcherBufferBytes: number;
  /** The bound on parked watchers, shared by every cache (`--max-parked-watchers`); disabled: close. */
  parkedWatchers: ParkedWatchers;
}

/** Reads and watchers of one resource. All calls are synchronous on the event loop. */
export class Cacher {
  readonly #state: CacheState;
  readonly #logger: Logger | undefined;
  readonly #timer: BookmarkTimer;
  readonly #bufferEvents: number;
  readonly #bufferBytes: number;
  readonly #onEventDispatched: (() => void) | undefined;
  readonly #onWatcherTerminated: ((reason: TerminationReason) => void) | undefined;
  readonly #parkedWatchers: ParkedWatchers;
  /** This cache's parked watchers (also in the shared {@link ParkedWatchers}). */
  readonly #parked = new Set<Watcher>();
  /** How each watcher parks (one object for all: the watcher is an argument). */
  readonly #parking: ParkingOptions | undefined;
  /** The window start the parked watchers were last checked against. */
  #checkedStart = -1n;
  /** Every open watcher; and the same split by the namespace it watches ("" = all). */
  readonly #watchers = new Set<Watcher>();
  readonly #watchersByNs = new Map<string, Set<Watcher>>();
  /** Sorted selections of paginated LISTs, for their next pages. */
  readonly #pages = new PageSnapshots();
  #terminatedWatchers = 0;
  #parks = 0;
  #resumes = 0;

  constructor(opts: CacherOptions) {
    const state = opts.state;
    this.#state = state;
    this.#logger = opts.logger;
    this.#bufferEvents = opts.watcherBufferEvents;
    this.#bufferBytes = opts.watcherBufferBytes;
    this.#onEventDispatched = opts.onEventDispatched;
    this.#onWatcherTerminated = opts.onWatcherTerminated;
    this.#parkedWatchers = opts.parkedWatchers;
    const onParked = opts.onWatcherParked;
    const onResumed = opts.onWatcherResumed;
    this.#parking = opts.parkedWatchers.enabled
      ? {
          history: state.history,
          onPark: (w) => {
            this.#parked.add(w);
            this.#parks++;
            onParked?.();
            this.#logger?.debug(
              { resource: state.resource.gvr.resource, position: String(w.position) },
              'watcher parked: buffer full (client too slow), resumes from the history when it reads',
            );
            this.#parkedWatchers.park(w);
          },
          onResume: (w) => {
            this.#parked.delete(w);
            this.#parkedWatchers.unpark(w);
            this.#resumes++;
            onResumed?.(w.catchupEvents);
          },
        }
      : undefined;
    this.#timer = new BookmarkTimer({
      clock: opts.clock,
      intervalMs: opts.bookmarkIntervalMs,
      send: (w) => {
        const rv = state.resourceVersion();
        w.bookmark(rv, state.bookmarks.periodic(rv, w.metadata));
      },
    });
  }

  /** Open watchers. */
  get watchers(): number {
    return this.#watchers.size;
  }

  /** Watchers the cache ended for cause so far (any {@link TerminationReason}). */
  get terminatedWatchers(): number {
    return this.#terminatedWatchers;
  }

  /** Watchers parked right now (or catching up from the history). */
  get parkedWatchers(): number {
    return this.#parked.size;
  }

  /** Parks so far. */
  get parks(): number {
    return this.#parks;
  }

  /** Parked watchers that caught up so far. */
  get resumes(): number {
    return this.#resumes;
  }

  /** See `WatchCache.list`. */
  list(q: ListRequest): ListResult {
    const s = this.#state;
    s.ready.check();
    const ns = s.resource.namespaced ? q.namespace : undefined;
    const start = q.continueFrom?.start;
    // Keys in a continue token are relative to the listed prefix: the name within a namespace.
    // Key order and relative-key order agree (one namespace shares the `ns/` prefix).
    const rel = (e: StoreEntry) => (ns !== undefined ? e.name : e.key);
    const current = s.resourceVersion();
    const rv = q.continueFrom?.rv ?? q.exactRV ?? current;
    const limit = q.limit && q.limit > 0 ? q.limit : 0;
    // Paginated reads keep their sorted selection for the next pages (PageSnapshots).
    const shard = q.shardSelector;
    const key =
      limit > 0 || start !== undefined
        ? selectionKey(rv, ns, [q.labelSelector, q.fieldSelector, shard?.string ?? ''])
        : undefined;
    let picked = key !== undefined ? this.#pages.get(key, s.history) : undefined;
    if (!picked) {
      const wanted = (e: StoreEntry) =>
        (ns === undefined || e.namespace === ns) &&
        inShard(shard, e) &&
        e.matches(q.labelSelector, q.fieldSelector);
      const window = { store: s.store, history: s.history, current };
      picked = snapshotAt(window, rv, { namespace: ns, fieldSelector: q.fieldSelector, wanted });
    }
    const from = start !== undefined ? firstFrom(picked, rel, start) : 0;
    const result: ListResult = { resourceVersion: String(rv), items: new EntryItems([], false) };
    let end = picked.length;
    if (limit > 0 && end - from === limit && shard !== undefined) {
      // A page filled exactly by a sharded read: the apiserver's cacher continues when objects it
      // did not select follow the last one (cacher.go `hasMoreListItems = i < len(resp.Items)-1`;
      // checked on v1.37.2 with a shard). A label or field selector does the same there; the
      // cache does not yet (a page of exactly the last matches ends without a token).
      const last = rel(picked[end - 1]!);
      const window = { store: s.store, history: s.history, current };
      const inNamespace = (e: StoreEntry) => ns === undefined || e.namespace === ns;
      const raw = snapshotAt(window, rv, {
        namespace: ns,
        fieldSelector: q.fieldSelector,
        wanted: inNamespace,
      });
      if (raw.length > 0 && rel(raw[raw.length - 1]!) > last) {
        result.continue = encodeContinue(last, rv);
        if (key !== undefined) this.#pages.put(key, s.history, rv, picked);
      }
    }
    if (limit > 0 && end - from > limit) {
      end = from + limit;
      result.continue = encodeContinue(rel(picked[end - 1]!), rv);
      // `SelectionPredicate.Empty()` is false for a sharded read: no count either.
      if (q.labelSelector.empty && q.fieldSelector.empty && !shard)
        result.remainingItemCount = picked.length - end;
      if (key !== undefined) this.#pages.put(key, s.history, rv, picked);
    }
    const entries = picked.slice(from, end);
    result.entries = entries;
    result.items = new EntryItems(entries, q.metadata !== undefined);
    if (shard) result.shardInfo = shard.string;
    return result;
  }

  /** See `WatchCache.get`. */
  get(namespace: string | undefined, name: string): StoreEntry | undefined {
    const s = this.#state;
    s.ready.check();
    return s.store.lookup(s.resource.namespaced ? (namespace ?? '') : '', name);
  }

  /** See `WatchCache.watch`. */
  watch(q: WatchRequest): CacheWatcher {
    const s = this.#state;
    s.ready.check();
    const ns = s.resource.namespaced ? q.namespace : undefined;
    const { labelSelector, fieldSelector, shardSelector } = q;
    // A change keeps its uid and namespace: an object is in a shard for all its versions.
    const filter = (e: StoreEntry) =>
      (ns === undefined || e.namespace === ns) &&
      inShard(shardSelector, e) &&
      e.matches(labelSelector, fieldSelector);
    const sel: Selection = { namespace: ns, fieldSelector, wanted: filter };
    const current = s.resourceVersion();
    const requested = q.resourceVersion ?? 0n;
    let initial: Iterator<WireLine> | undefined;
    let minRV = current;
    // The apiserver's watcher starts from the requested RV, or the snapshot's (`processInterval`).
    let startRV = current;

    if (q.sendInitialEvents === true) {
      // cacher.go `setInitialEventsEndBookmarkIfRequested`: the end bookmark only when the
      // client also asked for bookmarks (issue 11 item 1).
      const end = q.allowWatchBookmarks === true ? s.bookmarks.line(current, true, q.metadata) : undefined;
      initial = snapshotLines(s.store, sel, end, q.metadata);
    } else if (requested === 0n) {
      if (q.sendInitialEvents !== false) initial = snapshotLines(s.store, sel, undefined, q.metadata);
    } else if (requested < s.history.start) {
      const w = new Watcher({ minRV: current, filter, bufferEvents: 1 });
      const status = tooOldResourceVersion(requested, s.history.start).status;
      w.end('expired', eventLine('ERROR', encodeStatus(status)));
      return w;
    } else if (requested >= current) {
      minRV = requested;
      startRV = requested;
    } else {
      initial = historyLines(s.history.since(requested), filter, q.metadata);
      startRV = requested;
    }

    const nsKey = ns ?? '';
    const w = new Watcher({
      initial,
      minRV,
      startRV,
      filter,
      bufferEvents: this.#bufferEvents,
      bufferBytes: this.#bufferBytes,
      onClose: (closed, reason) => this.#unregister(closed, nsKey, reason),
      metadata: q.metadata,
      parking: this.#parking,
    });
    this.#watchers.add(w);
    let bucket = this.#watchersByNs.get(nsKey);
    if (!bucket) {
      bucket = new Set();
      this.#watchersByNs.set(nsKey, bucket);
    }
    bucket.add(w);
    this.#timer.arm(w, q.timeoutMs, q.allowWatchBookmarks === true);
    return w;
  }

  /**
   * Offers a change to the watchers of its namespace and of all namespaces (the cacher's
   * namespace trigger), then counts it as dispatched.
   */
  dispatch(event: HistoryEvent): void {
    const all = this.#watchersByNs.get('');
    if (all) for (const w of all) w.deliver(event);
    const own = event.cur.namespace ? this.#watchersByNs.get(event.cur.namespace) : undefined;
    if (own) for (const w of own) w.deliver(event);
    // Parked watchers whose position the window just left end now (their slot is freed).
    const start = this.#state.history.start;
    if (this.#parked.size > 0 && start !== this.#checkedStart) {
      this.#checkedStart = start;
      for (const w of this.#parked) w.checkWindow();
    }
    this.#pages.prune(this.#state.history);
    this.#onEventDispatched?.();
  }

  /** Ends every watcher with `reason` (cacher.go `terminateAllWatchers`) and stops their timers. */
  terminateAll(reason: CloseReason): void {
    for (const w of [...this.#watchers]) w.end(reason);
    this.#watchers.clear();
    this.#watchersByNs.clear();
  }

  #unregister(w: Watcher, nsKey: string, reason: CloseReason): void {
    this.#watchers.delete(w);
    const bucket = this.#watchersByNs.get(nsKey);
    bucket?.delete(w);
    if (bucket?.size === 0) this.#watchersByNs.delete(nsKey);
    this.#parked.delete(w);
    this.#parkedWatchers.unpark(w);
    const why = w.terminationReason;
    if (why) {
      this.#terminatedWatchers++;
      this.#onWatcherTerminated?.(why);
      this.#logger?.info(
        { resource: this.#state.resource.gvr.resource, reason: why, closed: reason },
        TERMINATION_MESSAGES[why],
      );
    }
  }
}

/** The log line of each termination reason. */
const TERMINATION_MESSAGES: Record<TerminationReason, string> = {
  unresponsive: 'watcher closed: buffer full (client too slow)',
  resource_expired: 'parked watcher ended with 410: its resourceVersion left the history window',
  resource_expired_initial:
    'parked watcher ended with 410 before its initial events were sent: its resourceVersion left the history window',
  stalled_client: 'parked watcher closed: the bound on parked watchers was reached (parked the longest)',
};

/** Whether `e` is in the shard `sel` selects (any object without a selector). */
function inShard(sel: ShardSelector | undefined, e: StoreEntry): boolean {
  return sel === undefined || sel.matches(e.uid ?? '', e.namespace);
}
