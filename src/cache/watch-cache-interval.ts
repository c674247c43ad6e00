/**
 * What a reader sees of the cache at one resourceVersion: apiserver
 * `storage/cacher/watch_cache_interval.go` (the interval a watcher replays: the store's snapshot
 * as synthetic ADDED events, `newCacheIntervalFromStore`, or the buffered events after an RV,
 * `newCacheInterval`) and the snapshot at an older RV that a LIST with
 * `resourceVersionMatch=Exact` or a `continue` token asks for (`watch_cache.go` snapshots).
 * Intervals are captured when the watch starts and encoded lazily as the client reads.
 */
import type { MetadataVersion } from '../apimachinery/accept.ts';
import type { FieldSelector } from '../apimachinery/field-selector.ts';
import { tooOldResourceVersion } from '../apimachinery/status.ts';
import type { WireLine } from '../apimachinery/watch-event.ts';
import type { History, HistoryEvent } from './history.ts';
import { compareEntryKeys, type Store, type StoreEntry } from './store.ts';

/** The cache state an interval is cut from (the watch cache's, at one instant). */
export interface CacheWindow {
  readonly store: Store;
  readonly history: History;
  /** The cache's current RV. */
  readonly current: bigint;
}

/** Which entries a reader wants: its namespace (undefined = all) and selectors. */
export interface Selection {
  namespace: string | undefined;
  /** Narrows the candidates through the store's indexes (see `Store.candidates`). */
  fieldSelector: FieldSelector;
  /** The full predicate every candidate must pass. */
  wanted: (e: StoreEntry) => boolean;
}

/**
 * The entries of `sel` at `rv`, in key order: the store as it is when `rv` is the current RV,
 * else rebuilt by undoing the history events newer than `rv` (for each key changed after `rv`,
 * its value before the oldest such change).
 * @throws StatusError 410 Expired when `rv` is outside the window [history start, current].
 */
export function snapshotAt(w: CacheWindow, rv: bigint, sel: Selection): StoreEntry[] {
  const picked: StoreEntry[] = [];
  const c = w.store.candidates(sel.namespace, sel.fieldSelector);
  if (rv === w.current) {
    for (const e of c.entries) if (sel.wanted(e)) picked.push(e);
    if (!c.sorted) picked.sort(byKey);
    return picked;
  }
  if (rv < w.history.start || rv > w.current) throw tooOldResourceVersion(rv, w.history.start);
  const undo = new Map<string, StoreEntry | null>();
  for (const e of w.history.newestFirstAfter(rv)) undo.set(e.cur.key, e.prev ?? null);
  for (const e of c.entries) if ((undo.size === 0 || !undo.has(e.key)) && sel.wanted(e)) picked.push(e);
  for (const e of undo.values()) if (e && sel.wanted(e)) picked.push(e);
  picked.sort(byKey);
  return picked;
}

/**
 * Synthetic ADDED lines for the current snapshot of `sel` (captured now; each entry's line is
 * chunks around a view of the stored bytes, nothing encoded: `StoreEntry.addedLine`), then
 * `end` (e.g. the initial-events-end BOOKMARK) when given.
 */
export function snapshotLines(
  store: Store,
  sel: Selection,
  end: Buffer | undefined,
  metadata?: MetadataVersion,
): Iterator<WireLine> {
  const entries: StoreEntry[] = [];
  const c = store.candidates(sel.namespace, sel.fieldSelector);
  for (const e of c.entries) if (sel.wanted(e)) entries.push(e);
  if (!c.sorted) entries.sort(byKey);
  return (function* () {
    if (metadata === undefined) for (const e of entries) yield e.addedLine;
    else for (const e of entries) yield e.metadataAddedLine(metadata);
    if (end) yield end;
  })();
}

/** The lines of `events` as a watcher whose selector is `passes` receives them (see `HistoryEvent.lineFor`). */
export function* historyLines(
  events: HistoryEvent[],
  passes: (e: StoreEntry) => boolean,
  metadata?: MetadataVersion,
): Generator<Buffer> {
  for (const e of events) {
    const line = metadata === undefined ? e.lineFor(passes) : e.metadataLineFor(passes, metadata);
    if (line) yield line;
  }
}

function byKey(a: StoreEntry, b: StoreEntry): number {
  return compareEntryKeys(a, b);
}

/**
 * The selections that paginated LISTs are walking, kept for their next pages: the state at an RV
 * never changes, so a `continue` (or Exact) page at that RV binary-searches the kept, sorted
 * selection instead of rebuilding and re-sorting every candidate per page. A selection is keyed
 * by RV, namespace and selectors (see {@link selectionKey}); at most `max` are kept (least
 * recently used dropped first), and one is dropped once its RV falls below the window or the
 * cache took a new snapshot (history epoch). Entries it holds are held by the store or the
 * history anyway while its RV is inside the window.
 */
export class PageSnapshots {
  readonly #max: number;
  readonly #kept = new Map<string, { epoch: number; rv: bigint; entries: StoreEntry[] }>();

  constructor(max = 4) {
    this.#max = max;
  }

  /** The selection kept under `key`, when still valid for `history`. */
  get(key: string, history: History): StoreEntry[] | undefined {
    const k = this.#kept.get(key);
    if (!k) return undefined;
    this.#kept.delete(key);
    if (k.epoch !== history.epoch || k.rv < history.start) return undefined;
    this.#kept.set(key, k);
    return k.entries;
  }

  /** Keeps `entries` (the sorted selection at `rv`) under `key`. */
  put(key: string, history: History, rv: bigint, entries: StoreEntry[]): void {
    this.#kept.delete(key);
    this.#kept.set(key, { epoch: history.epoch, rv, entries });
    if (this.#kept.size > this.#max) this.#kept.delete(this.#kept.keys().next().value!);
  }

  /** Drops the selections `history` no longer covers (call after each change). */
  prune(history: History): void {
    for (const [key, k] of this.#kept)
      if (k.epoch !== history.epoch || k.rv < history.start) this.#kept.delete(key);
  }

  get size(): number {
    return this.#kept.size;
  }
}

/** The {@link PageSnapshots} key of a selection at `rv`. */
export function selectionKey(
  rv: bigint,
  namespace: string | undefined,
  sel: { toString(): string }[],
): string {
  return [String(rv), namespace ?? '\u0000', ...sel.map(String)].join('\u0000');
}

/** Index of the first entry of `sorted` whose relative key (`rel`) is ≥ `start` (binary search). */
export function firstFrom(sorted: StoreEntry[], rel: (e: StoreEntry) => string, start: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rel(sorted[mid]!) < start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
