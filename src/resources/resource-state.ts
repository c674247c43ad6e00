/**
 * The ONE model of a cached resource's state: what `/readyz`, the state-mirroring metrics,
 * `/debug/cache` and the logs read about a resource. It is built from the two places that own the
 * facts — the reflector side (discovery, syncs, relists, errors: {@link ResourceEntry}, `cached-resource.ts`) and
 * the watch cache (store, history window, watchers: {@link WatchCacheStats}) — by
 * {@link resourceState}, and nowhere else. Times are ms since the epoch, `null` when the event has
 * not happened yet; enum values have one spelling everywhere (the relist reasons of
 * `reflector/reflector-status.ts` are the metric label values as they are).
 */

import type { ResourceInfo, ResourceScope } from '../apimachinery/gvr.ts';
import { type GroupVersionResource, groupResourceString } from '../apimachinery/gvr.ts';
import { scopeString } from '../apimachinery/resource-scope.ts';
import type { WatchCacheStats } from '../cache/watch-cache.ts';
import type { ReflectorStatus, RelistReason } from '../reflector/reflector-status.ts';
import type { SyncMode } from '../reflector/sync-progress.ts';

/** Why a cache exists: `configured` (`--resources`; gates `/readyz`, never evicted) or `auto` (started on demand by a client's LIST or WATCH, `--resources=auto`). */
export type CacheOrigin = 'configured' | 'auto';

/**
 * Where a resource's loop is: discovering (retried with backoff), running, stopped, or
 * `pass-through`: it cannot be cached (its resourceVersions do not parse), its reflector stopped
 * for good and every request for it is passed upstream.
 */
export type ResourcePhase = 'discovering' | 'running' | 'stopped' | 'pass-through';

/**
 * The reflector side of one cached resource (`cached-resource.ts`): discovery, phase, the
 * reflector's status. {@link ResourceState} is the one model built from it and the watch cache's stats.
 */
export interface ResourceEntry {
  /** The entry's key: as configured (`pods`, `deployments.apps`, …) or `resource.version[.group]` on demand. */
  name: string;
  /** The scope of a scoped cache (`--resources pods[fieldSelector=…]`); undefined: whole resource. */
  scope: ResourceScope | undefined;
  phase: ResourcePhase;
  info: ResourceInfo | undefined;
  /** The last discovery error (e.g. a CRD not installed yet); null when none. */
  discoveryError: string | null;
  reflector: ReflectorStatus | undefined;
  origin: CacheOrigin;
  /** When the entry was added, ms since the epoch. */
  startedMs: number;
}

/** A snapshot of one cached resource. See the module comment. */
export interface ResourceState {
  /** `resource[.group]` (`pods`, `deployments.apps`): the name of its `/readyz` check. */
  name: string;
  /** From discovery; `version` is "" until discovery succeeded. */
  gvr: GroupVersionResource;
  /**
   * The scope of a scoped cache as configured (`[fieldSelector=…;labelSelector=…]`,
   * `apimachinery/resource-scope.ts`); "" for a whole resource.
   */
  scope: string;
  /**
   * The one namespace a namespace-restricted cache lists, watches and answers (`--namespace`, or
   * an on-demand cache of the namespace whose request started it: `ResourceInfo.namespace`);
   * "" for all namespaces, for cluster-scoped resources, and before discovery.
   */
  namespace: string;
  /** The reflector loop's phase. */
  phase: ResourcePhase;
  /** `configured` (`--resources`; gates `/readyz`) or `auto` (started on demand, may be evicted). */
  origin: CacheOrigin;
  /** When the cache was added (process start for configured ones), ms since the epoch. */
  startedMs: number;
  /**
   * An on-demand cache: when a request for the resource was last seen (served from the cache or
   * passed upstream) or a watcher of it was last open, ms since the epoch; null for configured ones.
   */
  lastUsedMs: number | null;
  /** True once the first complete snapshot was stored (stays true across relists). */
  synced: boolean;
  /** The upstream stream is proven live (event or bookmark within the liveness window). */
  live: boolean;
  /**
   * The upstream sends periodic bookmarks for the resource (`ReflectorStatus.periodicBookmarks`):
   * only then is a silent stream presumed half-open and restarted.
   */
  periodicBookmarks: boolean;
  /** Current RV of the cache (decimal uint64 string); "" before the first snapshot. */
  resourceVersion: string;
  /** When the last complete snapshot was stored, ms since the epoch; null before. */
  lastSyncTimeMs: number | null;
  /** How the last snapshot was obtained; null before. */
  lastSyncMode: SyncMode | null;
  /** When the last event or bookmark arrived from upstream, ms since the epoch; null before. */
  lastProgressTimeMs: number | null;
  /** Objects in the store. */
  objects: number;
  /** Serialized bytes of the objects in the store. */
  bytes: number;
  /** Events currently buffered in the history window. */
  historyEvents: number;
  /** Capacity of the history ring (events) at this moment (it grows and shrinks). */
  historyCapacity: number;
  /** Bytes held by the buffered history events. */
  historyBytes: number;
  /**
   * Start of the window (exclusive): a WATCH resuming at this RV or later can be served; below
   * it the answer is 410. "" before the first snapshot.
   */
  oldestResourceVersion: string;
  /** When the oldest buffered event was received, ms since the epoch; null when none is buffered. */
  oldestEventTimeMs: number | null;
  /** Open downstream watchers served from the cache. */
  watchers: number;
  /** Watchers the cache ended for cause so far (too slow, fell out of the window, parked bound). Monotonic. */
  terminatedWatchers: number;
  /** Watchers parked right now: their client stopped reading; they resume from the history. */
  parkedWatchers: number;
  /**
   * Served from a snapshot (a warm start) the upstream has not proven yet (no watch from its RV
   * accepted): when the snapshot was taken, ms since the epoch; null otherwise.
   */
  restoredFromMs: number | null;
  /** Last reflector or discovery error, a short sentence without credentials; null when none. */
  lastError: string | null;
  /** Snapshots taken after the first, by reason. Monotonic for the life of the process. */
  relists: Partial<Record<RelistReason, number>>;
  /** The first state was restored from `--snapshot-dir` (no initial LIST); see `ReflectorStatus.warmStart`. */
  warmStart: boolean;
  /** Upstream watches re-opened without a relist (timeouts, liveness, 429, 5xx). Monotonic. */
  watchRestarts: number;
  /** Watch-list attempts that fell back to LIST (an apiserver without the WatchList feature). Monotonic. */
  watchListFallbacks: number;
}

/**
 * Builds the {@link ResourceState} of `entry` (the reflector side) and `stats` (its watch cache;
 * undefined before discovery created it). Before discovery, `fallbackGvr` (the configured name,
 * version "" unless configured) stands for the GroupVersionResource. `lastUsedMs`: an on-demand
 * cache's last use (`on-demand/caches.ts`).
 */
export function resourceState(
  entry: ResourceEntry,
  stats: WatchCacheStats | undefined,
  fallbackGvr: GroupVersionResource,
  lastUsedMs: number | null = null,
): ResourceState {
  const r = entry.reflector;
  const gvr = entry.info?.gvr ?? fallbackGvr;
  return {
    name: groupResourceString(gvr),
    gvr,
    scope: scopeString(entry.scope),
    namespace: entry.info?.namespace ?? '',
    phase: entry.phase,
    origin: entry.origin,
    startedMs: entry.startedMs,
    lastUsedMs,
    synced: stats?.synced ?? false,
    live: stats?.live ?? false,
    periodicBookmarks: r?.periodicBookmarks ?? false,
    resourceVersion: stats?.currentRV ?? '',
    lastSyncTimeMs: stats?.lastSyncTimeMs ?? null,
    lastSyncMode: r?.lastSyncMode ?? null,
    lastProgressTimeMs: stats?.lastProgressTimeMs ?? null,
    objects: stats?.objects ?? 0,
    bytes: stats?.bytes ?? 0,
    historyEvents: stats?.historyEvents ?? 0,
    historyCapacity: stats?.historyCapacity ?? 0,
    historyBytes: stats?.historyBytes ?? 0,
    oldestResourceVersion: stats?.oldestRV ?? '',
    oldestEventTimeMs: stats?.oldestEventTimeMs ?? null,
    watchers: stats?.watchers ?? 0,
    terminatedWatchers: stats?.terminatedWatchers ?? 0,
    parkedWatchers: stats?.parkedWatchers ?? 0,
    restoredFromMs: stats?.restoredFromMs ?? null,
    lastError: r?.lastError ?? entry.discoveryError,
    relists: { ...(r?.relists ?? {}) },
    warmStart: r?.warmStart ?? false,
    watchRestarts: r?.watchRestarts ?? 0,
    watchListFallbacks: r?.watchListFallbacks ?? 0,
  };
}
