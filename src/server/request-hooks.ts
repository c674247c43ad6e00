/**
 * What the server tells a feature above it about the requests it sees, fastify-style (named
 * hooks on the request's life, `fastify` `lib/hooks.js`), so that features that are not serving
 * (caching on demand, `on-demand/`) subscribe instead of living in the server. Every hook is
 * synchronous and cheap (called on every request) and must not throw: a request is never delayed
 * by it.
 *
 *   admitted       → after `admit` (`handle-request.ts`): a request for a resource that the
 *                    proxy let in (a client refused with 401/403/429 is never seen), classified
 *   upstreamStatus → the apiserver's final status code of the request passed upstream, before
 *                    the client sees the answer
 *   passedThrough  → the request goes upstream: its endings (shutdown's `track`) may be wrapped,
 *                    and a watch given a `handover` that ends it at an event boundary
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ResourceRequest } from '../apimachinery/request-info.ts';
import type { UpstreamReason } from './delegate.ts';
import type { PassThroughOptions } from './passthrough.ts';

/** How a request passed upstream ends besides by itself: shutdown (`track`) and a watch's `handover`. */
export type PassedThroughEndings = Pick<PassThroughOptions, 'track' | 'handover'>;

/** A request for a resource, admitted and classified. */
export interface AdmittedRequest {
  readonly info: ResourceRequest;
  readonly method: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly longRunning: boolean;
  /** Why it goes upstream as classified so far; undefined: the cache is to answer it. */
  readonly reason: UpstreamReason | undefined;
  /** Another resource whose cache the answer reads (`Delegation.needs`: a custom resource's Table, its CRDs). */
  readonly needs?: ResourceRequest;
}

/** What a subscriber wants to hear of one request after `admitted`. */
export interface RequestObserver {
  /** The apiserver's final status code (not 1xx); not called when no answer came. */
  upstreamStatus?(statusCode: number): void;
  /**
   * The request goes upstream for `reason` (as it stands now: the cache may have handed it on,
   * e.g. `not-synced`); returns its `endings`, wrapped or with a `handover` (long-running only).
   */
  passedThrough?(reason: UpstreamReason | undefined, endings: PassedThroughEndings): PassedThroughEndings;
}

/** A subscriber to the server's request hooks. */
export interface RequestHook {
  /** See the module comment; returns undefined when nothing more of this request is wanted. */
  admitted(r: AdmittedRequest): RequestObserver | undefined;
}

/** The observers of every hook for `r`, as one (upstreamStatus to each, passedThrough in order). */
export function observeRequest(
  hooks: readonly RequestHook[],
  r: AdmittedRequest,
): RequestObserver | undefined {
  const observers: RequestObserver[] = [];
  for (const h of hooks) {
    const o = h.admitted(r);
    if (o) observers.push(o);
  }
  if (observers.length === 0) return undefined;
  if (observers.length === 1) return observers[0];
  return {
    upstreamStatus(code) {
      for (const o of observers) o.upstreamStatus?.(code);
    },
    passedThrough(reason, endings) {
      let e = endings;
      for (const o of observers) e = o.passedThrough?.(reason, e) ?? e;
      return e;
    },
  };
}
