/**
 * What the on-demand cache manager (`--resources=auto`, `caches.ts`) is told about the requests
 * the server sees, through its subscription to the server's request hooks (`server-hook.ts`).
 * Every method is synchronous and cheap (called on every request) and must not throw: a request
 * is never delayed by it.
 */
import type { ResourceRequest } from '../apimachinery/request-info.ts';
import type { UpstreamReason } from '../server/delegate.ts';

/** See the module comment. */
export interface OnDemandHook {
  /**
   * Every request for a resource (its path parsed): `reason` is why it goes upstream (undefined:
   * the cache serves it). For a resource not cached, `not-cached` only when a cache could answer
   * the request (else the reason no cache could, e.g. `media-type` for a Table: `delegate.ts`
   * `uncacheableRequest`). A LIST or WATCH with `not-cached` may start a cache for the resource;
   * only requests an on-demand cache serves or could serve count as a use of it (idle eviction;
   * `USE_REASONS` of `on-demand/options.ts`).
   */
  request(info: ResourceRequest, reason: UpstreamReason | undefined, verb: 'list' | 'watch' | 'other'): void;
  /**
   * A WATCH of a collection passed upstream because the resource is not cached (yet) and a cache
   * could answer it, or its cache is not synced; it counts as a use of an on-demand cache of
   * that GroupVersionResource (idle eviction) while it is open (but not after a
   * namespace-restricted cache of another namespace synced). `handover` (given only for watches whose client re-watches, see
   * `rewatches` in `passed-through-endings.ts`) finishes it cleanly at an event boundary once a
   * cache that can answer it (its namespace, for a namespace-restricted one) is synced, so the
   * client re-watches into the cache; without it the watch stays passed through until it ends by
   * itself. `position` tells the resourceVersion of the last event relayed to its client (where
   * its re-watch will resume; undefined while unknown). Returns the unregister function (called
   * when the watch ends, whoever ended it).
   */
  trackWatch(
    info: ResourceRequest,
    handover: (() => void) | undefined,
    position?: () => bigint | undefined,
  ): () => void;
}
