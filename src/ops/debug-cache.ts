/**
 * The `/debug/cache` view of the ops listener: each cached resource's state rendered as JSON.
 * Exports the body's types ({@link DebugCache}, {@link DebugCacheResource}) and
 * {@link debugCacheView}, which turns a status snapshot into it (RFC 3339 times, ages in seconds).
 */
import type { ResourceState } from '../resources/resource-state.ts';

/**
 * One resource in the `/debug/cache` answer: the one state model (`resources/resource-state.ts`)
 * with the same field names, times rendered as RFC 3339 (UTC) and ages in seconds.
 */
export interface DebugCacheResource {
  /** `pods`, `deployments.apps`: the name used by `--resources` and `/readyz` checks. */
  name: string;
  group: string;
  version: string;
  resource: string;
  /** A scoped cache's selectors (`[fieldSelector=…]`, as configured); "" for a whole resource. */
  scope: string;
  /** A namespace-restricted cache's one namespace (`--namespace`, or an on-demand cache's); "" for all. */
  namespace: string;
  phase: ResourceState['phase'];
  /** `configured` (`--resources`) or `auto` (started on demand by a request). */
  origin: ResourceState['origin'];
  /** When the cache was added (RFC 3339). */
  started: string;
  /** On-demand caches: the last use (a request it served or could serve) or open watcher of it (RFC 3339); null for configured ones. */
  lastUsed: string | null;
  synced: boolean;
  /** Upstream watch stream proven live. */
  live: boolean;
  resourceVersion: string;
  lastSyncTime: string | null;
  lastProgressTime: string | null;
  objects: number;
  bytes: number;
  window: {
    events: number;
    capacity: number;
    bytes: number;
    /** Watches resuming below this RV get 410. */
    oldestResourceVersion: string;
    oldestEventAgeSeconds: number | null;
  };
  watchers: number;
  lastError: string | null;
  relists: ResourceState['relists'];
  watchRestarts: number;
  watchListFallbacks: number;
  /**
   * The upstream sends periodic bookmarks for this resource (served from the apiserver's watch
   * cache): only then is a silent stream restarted as half-open.
   */
  periodicBookmarks: boolean;
}

/** The `/debug/cache` JSON body. */
export interface DebugCache {
  /** Every configured resource synced once or served by pass-through only (the `/readyz` condition; on-demand caches do not count). */
  ready: boolean;
  resources: DebugCacheResource[];
}

/** Renders the status snapshot for `/debug/cache` at time `nowMs`. */
export function debugCacheView(statuses: readonly ResourceState[], nowMs: number): DebugCache {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    ready: statuses.every((s) => s.origin !== 'configured' || s.synced || s.phase === 'pass-through'),
    resources: statuses.map((s) => ({
      name: s.name,
      group: s.gvr.group,
      version: s.gvr.version,
      resource: s.gvr.resource,
      scope: s.scope,
      namespace: s.namespace,
      phase: s.phase,
      origin: s.origin,
      started: new Date(s.startedMs).toISOString(),
      lastUsed: iso(s.lastUsedMs),
      synced: s.synced,
      live: s.live,
      resourceVersion: s.resourceVersion,
      lastSyncTime: iso(s.lastSyncTimeMs),
      lastProgressTime: iso(s.lastProgressTimeMs),
      objects: s.objects,
      bytes: s.bytes,
      window: {
        events: s.historyEvents,
        capacity: s.historyCapacity,
        bytes: s.historyBytes,
        oldestResourceVersion: s.oldestResourceVersion,
        oldestEventAgeSeconds:
          s.oldestEventTimeMs === null ? null : Math.max(0, nowMs - s.oldestEventTimeMs) / 1000,
      },
      watchers: s.watchers,
      lastError: s.lastError,
      relists: s.relists,
      watchRestarts: s.watchRestarts,
      watchListFallbacks: s.watchListFallbacks,
      periodicBookmarks: s.periodicBookmarks,
    })),
  };
}
