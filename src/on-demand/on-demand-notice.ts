/**
 * What the on-demand manager (`--resources=auto`, `on-demand-hook.ts`) is told of one admitted
 * request, and when (issue 15): a request is a use of an on-demand cache, or (a LIST or WATCH of
 * a resource not cached) may start one, but only once the apiserver answered it 2xx, so a
 * client the apiserver refuses (401, 403, 404: anonymous, another identity's RBAC, an invented
 * resource) makes the proxy neither start nor review anything.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isWatchParam, type ResourceRequest } from '../apimachinery/request-info.ts';
import { type UpstreamReason, uncacheableRequest } from '../server/delegate.ts';
import type { OnDemandHook } from './on-demand-hook.ts';

/** The admitted request (`server/request-hooks.ts` `AdmittedRequest`) as the manager is told of it. */
export interface NoticedRequest {
  info: ResourceRequest;
  method: string;
  query: URLSearchParams;
  /** {@link onDemandReasonOf}. */
  reason: UpstreamReason | undefined;
}

/**
 * Tells `hook` of `r` now (a use, or nothing to start), or returns the function the pass-through
 * calls with the apiserver's status code (the `upstreamStatus` request hook) for a LIST or WATCH
 * that may start a cache (`not-cached`): it tells `hook` on a 2xx only.
 */
export function tellOnDemandOf(
  hook: OnDemandHook,
  r: NoticedRequest,
): ((statusCode: number) => void) | undefined {
  const { info, reason } = r;
  const collection = r.method === 'GET' && info.name === undefined && info.subresource === undefined;
  const verb = !collection ? 'other' : isWatchParam(r.query.get('watch')) ? 'watch' : 'list';
  if (reason !== 'not-cached' || verb === 'other') {
    hook.request(info, reason, verb);
    return undefined;
  }
  return (status) => {
    if (status >= 200 && status < 300) hook.request(info, reason, verb);
  };
}

/**
 * The reason the on-demand manager is told: a `not-cached` request no cache could answer (a
 * Table, `pretty`, …) gets the reason no cache could (`uncacheableRequest` of `delegate.ts`), so
 * it starts nothing and is not tracked; any other reason as it is.
 */
export function onDemandReasonOf(
  info: ResourceRequest | undefined,
  reason: UpstreamReason | undefined,
  query: URLSearchParams,
  headers: IncomingHttpHeaders,
): UpstreamReason | undefined {
  if (reason !== 'not-cached' || !info) return reason;
  return uncacheableRequest(info, query, headers) ?? reason;
}
