/**
 * The options and vocabulary of the on-demand cache manager (`--resources=auto`,
 * `on-demand/caches.ts`): its settings, the I/O main.ts injects (`wiring.ts`), and the
 * reasons it counts in `kube_cache_proxy_on_demand_caches_total`.
 */
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { CACHE_STATE_REASONS, type UpstreamReason } from '../server/delegate.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';

/** Why an on-demand cache was not started (`kube_cache_proxy_on_demand_caches_total{event="refused"}`). */
export type RefusedReason = 'excluded' | 'not-list-watchable' | 'forbidden' | 'at-capacity' | 'error';
/** Why an on-demand cache was stopped (`{event="stopped"}`). */
export type StoppedReason = 'idle' | 'evicted' | 'resource-gone';

/** What one on-demand cache reports for eviction decisions. */
export interface CacheUsage {
  /** Open watchers served from it. */
  watchers: number;
  /** Bytes of its stored objects. */
  bytes: number;
}

/** Options of {@link OnDemandCaches}; the I/O is injected (main.ts wires the real one). */
export interface OnDemandOptions {
  /** `--auto-exclude`: `resource` (core) or `resource.group`. */
  exclude: readonly string[];
  /** `--auto-idle-timeout`, ms. */
  idleTimeoutMs: number;
  /** `--auto-max-resources`. */
  maxResources: number;
  /** `--auto-max-bytes`: bytes of cached objects of every cache. */
  maxBytes: number;
  /** Configured resources (`group/resource`): never cached on demand (never widened or doubled). */
  configured: readonly { group: string; resource: string }[];
  /** `--namespace`: reviews (and the caches) are in this namespace only. */
  namespace?: string;
  /** Discovery of one GroupVersionResource by name (`configmaps.v1`, `widgets.v1.example.com`). */
  discover(name: string): Promise<ResourceInfo>;
  /** Whether the proxy's identity may `verb` the resource (SelfSubjectAccessReview); namespace "" = all. */
  allowed(verb: 'list' | 'watch', info: ResourceInfo, namespace: string): Promise<boolean>;
  /**
   * Adds the cache to the ResourceSet, which starts it; false when it could not be added (one of
   * that name exists, or the set is not started or closed). `onError` sees each ListAndWatch
   * error. `info.namespace` is set for a cache restricted to one namespace.
   */
  start(name: string, info: ResourceInfo, onError: (err: unknown) => void): boolean;
  /** Stops the reflector, ends its watchers, removes the cache from the server and frees it. */
  stop(name: string): Promise<void>;
  /** Usage of a started cache (undefined before its watch cache exists). */
  usage(name: string): CacheUsage | undefined;
  /** Bytes of stored objects over every cache (configured and on demand). */
  totalBytes(): number;
  /**
   * Lets the synced cache `name` serve a watch resuming from `rv`, below its window, by asking
   * the upstream to prove the resource unchanged since (the cache's `extendWindowBack`); resolves
   * whether it can (never rejects). Without it the handover does not wait for that proof.
   */
  extendWindowBack?(name: string, rv: bigint): Promise<boolean>;
  clock: Clock;
  log: Logger;
  /** `kube_cache_proxy_on_demand_caches_total`. */
  count?: (event: 'started' | 'stopped' | 'refused', reason: string) => void;
  /** How long a refusal is remembered (ms); default 60 000. A missing resource: 5 000. */
  negativeTtlMs?: number;
}

/**
 * The reasons of a request for a cached resource that still count as a use of its on-demand
 * cache (idle eviction, LRU order): the cache serves it, or could but for its state at that
 * moment (not synced yet, not live, …). A request no cache answers (`media-type`: a `kubectl
 * get` Table; `namespace-outside-cache`; a write, a subresource, …) is not a use: else one
 * `kubectl get pods -A` now and then would hold every pod in memory (issue 15).
 */
export const USE_REASONS: ReadonlySet<UpstreamReason> = new Set<UpstreamReason>([
  'not-cached',
  ...CACHE_STATE_REASONS,
]);
