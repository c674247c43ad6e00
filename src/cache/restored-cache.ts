/**
 * What a watch cache is saved as and restored from across a restart (docs/design.md §3,
 * "Snapshots and warm restart"): the store at the cache's current RV and the history window
 * (its start and events) — {@link CacheCapture} out, {@link RestoredCache} in. The apiserver
 * keeps none of this (its watch cache is rebuilt by a LIST); the state is the watch cache's own,
 * so restoring it is rebuilding exactly the (store, history, RV) triple `watch-cache.ts` had.
 */
import type { UpstreamObject } from '../apimachinery/object.ts';
import { ResourceVersionError } from '../util/errors.ts';
import { type ChangeType, HistoryEvent } from './history.ts';
import { objectKey, parseRV, type Store, type StoreEntry } from './store.ts';

/**
 * The cache at one instant, as references (entries are immutable and their bytes never
 * overwritten, `slab.ts`, so they may be read later, a chunk at a time).
 */
export interface CacheCapture {
  /** The RV the store is exact at (the cache's current RV). */
  resourceVersion: bigint;
  /** The window's exclusive start. */
  windowStart: bigint;
  /** Every stored object. */
  entries: StoreEntry[];
  /** The window's events, oldest first. */
  events: HistoryEvent[];
}

/** One event to restore into the window. */
export interface RestoredEvent {
  type: ChangeType;
  /** ms since the epoch, as recorded before the restart. */
  at: number;
  cur: UpstreamObject;
  /** The state it replaced, when no earlier restored event holds it. */
  prev: UpstreamObject | undefined;
}

/** The state a cache is restored to ({@link restoredEntries}). */
export interface RestoredCache {
  resourceVersion: bigint;
  windowStart: bigint;
  objects: UpstreamObject[];
  events: RestoredEvent[];
}

/**
 * The store entries and history events of `s`, built with `store`'s entry factory. An entry is
 * shared as it was before the restart: an event's replaced state is the previous event's object
 * of the same key, and a stored object whose last change is in the window is that event's
 * object (so the history releases exactly what only it holds).
 * @throws ResourceVersionError when the RVs do not add up (an event at or below the window's
 *   start or above the current RV, not increasing; an object newer than the current RV): the
 *   snapshot is then not used.
 */
export function restoredEntries(
  store: Store,
  s: RestoredCache,
): { entries: StoreEntry[]; events: HistoryEvent[] } {
  const latest = new Map<string, StoreEntry | null>();
  const events: HistoryEvent[] = [];
  let last = s.windowStart;
  const bad = (what: string) =>
    new ResourceVersionError('KCP_ERR_UNEARNED_RESOURCE_VERSION', `snapshot inconsistent: ${what}`);
  for (const e of s.events) {
    const cur = store.entry(e.cur);
    if (cur.rv <= last || cur.rv > s.resourceVersion) throw bad(`event at ${cur.rv} after ${last}`);
    last = cur.rv;
    const key = cur.key;
    let prev: StoreEntry | undefined;
    if (latest.has(key)) prev = latest.get(key) ?? undefined;
    else if (e.prev) prev = store.entry(e.prev);
    events.push(new HistoryEvent(e.type, cur, prev, e.at));
    latest.set(key, e.type === 'DELETED' ? null : cur);
  }
  const entries: StoreEntry[] = [];
  for (const o of s.objects) {
    const m = o.object.metadata;
    const rv = parseRV(m.resourceVersion);
    if (rv > s.resourceVersion) throw bad(`object at ${rv} above ${s.resourceVersion}`);
    const held = latest.get(objectKey(m.namespace, m.name));
    entries.push(held && held.rv === rv ? held : store.entry(o));
  }
  return { entries, events };
}
