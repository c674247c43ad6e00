/**
 * Instrumentation of every request the proxy sends upstream: an undici dispatcher wrapper.
 * Exports {@link observeUpstream}, which counts requests by verb/resource/code (as client-go's
 * `rest_client_requests_total`) and times them until response headers, and
 * {@link upstreamRequestLabels}, which names a request as the apiserver's `requestinfo.go` would.
 */
import type { Dispatcher } from 'undici';
import { parseResourcePath } from '../apimachinery/request-info.ts';
import { requestVerb } from '../apimachinery/request-verb.ts';
import { type Clock, realClock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { boundCode, boundVerb, subresourceLabel } from './metric-labels.ts';
import type { Metrics } from './metrics.ts';

/** Labels of one upstream request (`kube_cache_proxy_upstream_requests_total`). */
export interface UpstreamRequestLabels {
  /** Kubernetes verb in upper case (`LIST`, `WATCH`, `GET`, `CREATE`, …) or the HTTP method. */
  verb: string;
  group: string;
  /** Not a metric label: with the others, what the label bound counts. */
  version: string;
  /** "" for non-resource paths (discovery, `/version`). */
  resource: string;
  /** One segment (`proxy` for `…/proxy/a/b`, as `RequestInfo.Subresource`); "" for none. */
  subresource: string;
  /** Set for namespaced paths; not a metric label (unbounded), used by the RBAC log line. */
  namespace?: string | undefined;
  /** The path without query; not a metric label, used by the RBAC log line for non-resource paths. */
  path: string;
}

/**
 * Labels for `METHOD path?query` as the apiserver's `apiserver_request_total` would name them
 * (`endpoints/request/requestinfo.go` + `endpoints/metrics`): GET on a collection is LIST, or
 * WATCH with `watch=1`; a subresource is reported as `resource/subresource`.
 */
export function upstreamRequestLabels(method: string, pathAndQuery: string): UpstreamRequestLabels {
  const q = pathAndQuery.indexOf('?');
  const path = q < 0 ? pathAndQuery : pathAndQuery.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : pathAndQuery.slice(q + 1));
  const info = parseResourcePath(path);
  const w = query.get('watch');
  const watch = w !== null && w !== '0' && w.toLowerCase() !== 'false';
  return {
    verb: requestVerb(method.toUpperCase(), info, watch),
    group: info?.group ?? '',
    version: info?.version ?? '',
    resource: info?.resource ?? '',
    subresource: subresourceLabel(info?.subresource),
    namespace: info?.namespace,
    path,
  };
}

/** Options of {@link observeUpstream}. */
export interface UpstreamObserverOptions {
  metrics: Pick<Metrics, 'upstreamRequests' | 'upstreamRequestDuration' | 'resourceLabels'>;
  clock?: Clock;
  /**
   * Logs a 403 answer as a missing RBAC permission of the proxy's OWN identity, naming the verb
   * and resource (at most once a minute per verb/resource/namespace). Set it only on the
   * dispatcher the reflectors use: pass-through 403s are the client's business.
   */
  forbiddenLogger?: Logger;
}

const FORBIDDEN_LOG_INTERVAL_MS = 60_000;

/**
 * Wraps `dispatcher` (an undici interceptor, so every request through it is seen: reflector
 * lists and watches, discovery, pass-through) to count upstream requests by verb, resource and
 * HTTP code (`<error>` when no answer arrived, as client-go's `rest_client_requests_total`) and
 * observe the seconds until response headers (for a watch: until the stream is established).
 * Returns a dispatcher that closes the original one on close.
 */
export function observeUpstream(dispatcher: Dispatcher, opts: UpstreamObserverOptions): Dispatcher {
  const clock = opts.clock ?? realClock;
  const lastForbiddenLog = new Map<string, number>();
  const onForbidden = (l: UpstreamRequestLabels) => {
    const log = opts.forbiddenLogger;
    if (!log) return;
    const rbacVerb = l.verb.toLowerCase();
    // RBAC names a subresource `resource/sub`.
    const resource = l.subresource === '' ? l.resource : `${l.resource}/${l.subresource}`;
    const key = `${rbacVerb} ${l.group}/${resource} ${l.namespace ?? ''}`;
    const now = clock.now();
    const last = lastForbiddenLog.get(key);
    if (last !== undefined && now - last < FORBIDDEN_LOG_INTERVAL_MS) return;
    lastForbiddenLog.set(key, now);
    const gr = l.group === '' ? resource : `${resource}.${l.group}`;
    const where = l.namespace !== undefined ? `in namespace ${l.namespace}` : 'cluster-wide';
    // Discovery (/api, /apis, /version) is allowed to every authenticated user by the
    // bootstrap ClusterRole system:discovery: a 403 there means the request went out without
    // credentials (system:anonymous), e.g. a kubeconfig user whose token key was not read.
    const msg =
      l.resource === ''
        ? `forbidden: the proxy's identity may not ${rbacVerb} ${l.path}, which every authenticated user may (system:discovery): check the credentials of the proxy's kubeconfig user (a request without them is system:anonymous)`
        : `missing RBAC permission: the proxy's identity may not ${rbacVerb} ${gr} ${where}; grant list and watch on every cached resource (see deploy/)`;
    log.error(
      {
        verb: rbacVerb,
        group: l.group,
        resource,
        namespace: l.namespace,
        path: l.path,
        code: 403,
      },
      msg,
    );
  };
  const interceptor =
    (dispatch: Dispatcher['dispatch']): Dispatcher['dispatch'] =>
    (reqOpts, handler) => {
      const labels = upstreamRequestLabels(reqOpts.method, reqOpts.path);
      const start = clock.now();
      let answered = false;
      /** Counts the answer (its code) once the resource labels are bounded (metric-labels.ts). */
      const count = (code: string, seconds?: number) =>
        opts.metrics.resourceLabels.bound(labels, (b) => {
          // Every label bounded; a subresource is reported as `resource/sub`.
          const metricLabels = {
            verb: boundVerb(labels.verb),
            group: b.group,
            resource: b.subresource === '' ? b.resource : `${b.resource}/${b.subresource}`,
          };
          opts.metrics.upstreamRequests.inc({ ...metricLabels, code });
          if (seconds !== undefined) opts.metrics.upstreamRequestDuration.observe(metricLabels, seconds);
        });
      const wrapped: Dispatcher.DispatchHandler = {
        onRequestStart: (c, ctx) => handler.onRequestStart?.(c, ctx),
        onRequestUpgrade: (c, s, h, socket) => handler.onRequestUpgrade?.(c, s, h, socket),
        onResponseStart(c, statusCode, headers, statusMessage) {
          // Interim 1xx answers are not the response.
          if (statusCode >= 200 && !answered) {
            answered = true;
            count(boundCode(statusCode), (clock.now() - start) / 1000);
            if (statusCode === 403) onForbidden(labels);
          }
          return handler.onResponseStart?.(c, statusCode, headers, statusMessage);
        },
        onResponseData: (c, chunk) => handler.onResponseData?.(c, chunk),
        onResponseEnd: (c, trailers) => handler.onResponseEnd?.(c, trailers),
        onResponseError(c, err) {
          if (!answered) {
            answered = true;
            count('<error>');
          }
          return handler.onResponseError?.(c, err);
        },
      };
      return dispatch(reqOpts, wrapped);
    };
  return dispatcher.compose(interceptor);
}
