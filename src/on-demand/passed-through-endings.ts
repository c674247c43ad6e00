/**
 * How a request passed upstream ends besides by itself (issue 15, bug F1): shutdown ends every
 * one at once; a WATCH passed upstream while an on-demand cache of its resource starts may also
 * be ended by the handover once that cache is synced, but only when its client re-watches
 * ({@link rewatches}); any other stays passed through until it ends by itself.
 */
import { isWatchParam, type ResourceRequest } from '../apimachinery/request-info.ts';
import type { UpstreamReason } from '../server/delegate.ts';
import type { PassThroughOptions } from '../server/passthrough.ts';
import type { OnDemandHook } from './on-demand-hook.ts';

/** What {@link passedThroughEndings} looks at: the admitted request (`server-hook.ts`) as it goes upstream. */
export interface PassedRequest {
  /** Registers a function that ends the request at shutdown; returns its unregister. */
  track: (end: () => void) => () => void;
  /** The on-demand cache manager (`--resources=auto`); undefined: only shutdown ends the request. */
  onDemand: OnDemandHook | undefined;
  /** The resource path parsed; undefined for non-resource paths. */
  info: ResourceRequest | undefined;
  longRunning: boolean;
  method: string;
  query: URLSearchParams;
  /**
   * Why it goes upstream; for a resource not cached, `not-cached` only when a cache could answer
   * it (else the reason none could, `uncacheableRequest` of `delegate.ts`: a Table watch is not
   * registered).
   */
  reason: UpstreamReason | undefined;
}

/**
 * The `track` (always: shutdown) and, for a watch the handover may end, the `handover` of a
 * passed-through request. A WATCH of a collection that is not cached (yet) or not synced is
 * registered with the on-demand manager (a use of its cache while open); one whose client
 * {@link rewatches} gets a `handover` that ends it at an event boundary once the cache is synced
 * (`watch-relay.ts`); the others (`kubectl get -w`) are registered without one.
 */
export function passedThroughEndings(r: PassedRequest): Pick<PassThroughOptions, 'track' | 'handover'> {
  const { info, onDemand: hook } = r;
  if (
    !hook ||
    !info ||
    !r.longRunning ||
    info.name !== undefined ||
    info.subresource !== undefined ||
    r.method !== 'GET' ||
    !isWatchParam(r.query.get('watch')) ||
    (r.reason !== 'not-cached' && r.reason !== 'not-synced')
  )
    return { track: r.track };
  if (rewatches(r.query))
    return { track: r.track, handover: (end, position) => hook.trackWatch(info, end, position) };
  return {
    track: (end) => {
      const a = r.track(end);
      const b = hook.trackWatch(info, undefined);
      return () => {
        a();
        b();
      };
    },
  };
}

/**
 * Whether the client of a WATCH re-watches when its watch ends cleanly, so the on-demand
 * handover may end it: `allowWatchBookmarks=true` (the apiserver's boolean parsing,
 * `isWatchParam`). client-go's reflector (informers, controller-runtime) sends it on every watch
 * (`tools/cache/reflector.go` `watch`: `AllowWatchBookmarks: true`; its watch-list request sends
 * it too, with `sendInitialEvents=true`) and re-watches from its last RV when a watch ends.
 * `kubectl get -w` does not send it (`kubectl/pkg/cmd/get/get.go` `watch` → cli-runtime
 * `Selector.Watch`: `ResourceVersion`, `LabelSelector`, `FieldSelector` only) and exits when its
 * single watch ends (`watchtools.UntilWithoutRetry`): its watch is never ended by a handover.
 */
export function rewatches(query: URLSearchParams): boolean {
  return isWatchParam(query.get('allowWatchBookmarks'));
}
