/**
 * The contract between the Reflector (which fills the cache) and the watch cache (which serves
 * it): the apiserver cacher's `watchCache` is a `cache.Store` that its reflector writes into
 * (client-go `tools/cache/store.go`); here that Store is {@link CacheSink}.
 */
import type { UpstreamObject } from '../apimachinery/object.ts';

/**
 * What the Reflector writes into (apiserver `watchCache` as a `cache.Store`, plus
 * `UpdateResourceVersion` for bookmarks). RVs are decimal strings that parse as uint64.
 *
 * Invariants the Reflector guarantees:
 * - `replace` is called with a complete, consistent snapshot at `resourceVersion` (a LIST answer,
 *   or a watch-list burst ended by its `k8s.io/initial-events-end` bookmark) — never half a burst.
 * - After `replace`, `add`/`update`/`delete`/`bookmark` arrive in strictly increasing RV order
 *   and each RV is one the upstream actually reached (never an unearned synthetic-ADDED RV).
 * - Calls are synchronous and never concurrent (one reflector per sink).
 */
export interface CacheSink {
  /**
   * Atomically replace the whole contents with `objects` at `resourceVersion`. On a cache that
   * already served watchers this is a relist: open watchers are ended cleanly and the history
   * window restarts at `resourceVersion` (apiserver cacher behaviour, docs/design.md §3 "Relist").
   * `bookmarkObject`, when the snapshot came from a watch-list, is the `object` bytes of the
   * `k8s.io/initial-events-end` BOOKMARK as received: the cache learns from it the exact shape the
   * upstream gives bookmark objects of this kind, so its own bookmarks match byte for byte.
   * `objects` may repeat a key (a watch-list burst is passed without a map by key): the later
   * object wins, as in the temporary store it stands for.
   */
  replace(objects: UpstreamObject[], resourceVersion: string, bookmarkObject?: Buffer): void;
  /**
   * Optional: called on each object of a watch-list snapshot as it arrives, long before the
   * snapshot is complete; returns the form to hold until then (and to pass to `replace`), so a
   * sink that keeps less than the whole parsed object lets the rest go at once instead of after
   * the last object (issue 12: the snapshot's parsed objects set the process's peak RSS).
   */
  compact?(obj: UpstreamObject): UpstreamObject;
  /** An ADDED event; the object's RV becomes the cache's RV. */
  add(obj: UpstreamObject): void;
  /** A MODIFIED event. */
  update(obj: UpstreamObject): void;
  /** A DELETED event; `obj` is the last state, with the deletion's RV. */
  delete(obj: UpstreamObject): void;
  /**
   * Progress without a change (a BOOKMARK): the cache's RV becomes `resourceVersion`. `object`,
   * optional, is the bookmark's `object` bytes as received (see `replace`).
   */
  bookmark(resourceVersion: string, object?: Buffer): void;
  /**
   * Whether the upstream stream is proven live (an event or bookmark arrived within the
   * liveness window). RV="" ("consistent") reads are served from the cache only while true.
   */
  setLive(live: boolean): void;
}

/**
 * `sink` with observers: `onEvent` for every ADDED/MODIFIED/DELETED the reflector delivers (not
 * bookmarks: `kube_cache_proxy_watch_cache_events_received_total`), `onFirstSync` once, after
 * the first complete snapshot was stored (an on-demand cache ends its passed-through watches),
 * `onRelist` after every later one (a relist: the resource may have changed, issue 15).
 */
export function observedSink(
  sink: CacheSink,
  o: { onEvent?: () => void; onFirstSync?: () => void; onRelist?: () => void },
): CacheSink {
  const onEvent = o.onEvent ?? (() => {});
  let synced = false;
  return {
    replace: (objects, rv, bookmark) => {
      sink.replace(objects, rv, bookmark);
      if (synced) o.onRelist?.();
      else {
        synced = true;
        o.onFirstSync?.();
      }
    },
    add: (obj) => {
      onEvent();
      sink.add(obj);
    },
    update: (obj) => {
      onEvent();
      sink.update(obj);
    },
    delete: (obj) => {
      onEvent();
      sink.delete(obj);
    },
    bookmark: (rv, obj) => sink.bookmark(rv, obj),
    setLive: (live) => sink.setLive(live),
    ...(sink.compact ? { compact: (obj: UpstreamObject) => sink.compact!(obj) } : {}),
  };
}
