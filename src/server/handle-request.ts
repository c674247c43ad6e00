/**
 * The life of one request on the main listener: a named list of steps run in order, in the
 * manner of fastify's `lib/handle-request.js` and `lib/hooks.js`:
 *
 *   classify → limit → observe → admit → notify → auditRequest → serveFromCache → passUpstream, then record
 *
 * - {@link classify}: the origin-form target, its query (Go parsing) and the delegation decision
 *   (`delegate.ts`: the cache, or upstream and why);
 * - `limit`: a slot of the cap the request counts against, else 429 (apiserver max-in-flight);
 * - `observe`: aborts the cache's waits when the client leaves early, arms `record`;
 * - `admit`: who asks (`auth/access-control.ts`): 401/403, or whether a cached read may be
 *   served from the cache to this identity;
 * - `notify`: the request hooks (`request-hooks.ts`) hear of an admitted request for a resource
 *   (caching on demand subscribes): a client refused (401/403) is never seen;
 * - `auditRequest`: the audit event of a request the proxy answers itself (`audit-steps.ts`);
 * - `serveFromCache`: the watch cache answers, or hands the request on with its reason;
 * - `passUpstream`: the apiserver answers (writes to cached resources feed read-your-writes);
 * - `record`: once the response closed AND the steps returned: the audit's `ResponseComplete`,
 *   `kube_cache_proxy_requests_total`
 *   (with `served_from` and `reason`), the latency histogram and the request's debug log line.
 * A step answers 'done' when the request has been answered, 'next' to go on.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseGoQuery } from '../apimachinery/go-query.ts';
import { isLongRunning, isWatchParam } from '../apimachinery/request-info.ts';
import { requestVerb } from '../apimachinery/request-verb.ts';
import { tooManyRequests } from '../apimachinery/status.ts';
import type { Auditor, RequestAudit } from '../audit/auditor.ts';
import type { AccessControl, AuthzDecision, ClientIdentity } from '../auth/access-control.ts';
import { boundCode, boundVerb, subresourceLabel } from '../ops/metric-labels.ts';
import type { Metrics, ServedFrom } from '../ops/metrics.ts';
import type { Logger } from '../util/logger.ts';
import { ASTERISK_STAND_IN, asteriskAnswer, isAsteriskTarget } from './asterisk-target.ts';
import { auditHandedUpstream, auditRefusal, auditStart } from './audit-steps.ts';
import type { CacheRegistry } from './cache-registry.ts';
import { type CacheVerb, type Delegation, delegate, type UpstreamReason } from './delegate.ts';
import type { Limiter } from './limiter.ts';
import { passThrough } from './passthrough.ts';
import type { AnswerTee } from './read-your-writes/answer-tee.ts';
import { answerTeeFor } from './read-your-writes/tracked-answers.ts';
import type { WriteTracker } from './read-your-writes/write-tracker.ts';
import { observeRequest, type RequestHook, type RequestObserver } from './request-hooks.ts';
import { writeStatus } from './send-status.ts';
import { type CacheHandler, type ServeContext, TOO_MANY_REQUESTS } from './serve-context.ts';
import { serveGet, serveList } from './serve-read.ts';
import { serveWatch } from './serve-watch.ts';
import type { UpstreamTarget } from './upstream-target.ts';

/** What every request's steps share; built once by `buildServer`. */
export interface Lifecycle {
  registry: CacheRegistry;
  writes: WriteTracker;
  serve: ServeContext;
  upstream: UpstreamTarget;
  /** Short requests answered from the cache (`--max-inflight`). */
  inflight: Limiter;
  /**
   * Short requests passed upstream have their own slots: when the apiserver hangs (frozen,
   * black-holed) they wait up to the upstream header timeout, and must not take every slot the
   * requests answered from the cache need (RV=0 reads keep working while it is down).
   */
  upstreamInflight: Limiter;
  /** Watches and other long-running requests (`--max-watchers`). */
  watchers: Limiter;
  /** Registers a function that ends an open stream at shutdown; returns its unregister. */
  track: (end: () => void) => () => void;
  metrics?: Pick<Metrics, 'requests' | 'requestDuration' | 'refusedRequests' | 'resourceLabels'> | undefined;
  log: Logger;
  /** Who asks and may the cache answer them; undefined: no checks (unit tests of other steps). */
  access?: AccessControl | undefined;
  /** Subscribers to the request hooks (`request-hooks.ts`); empty: none. */
  hooks: readonly RequestHook[];
  /** The audit (`--audit-policy-file`, `--audit-log-path`; docs/audit.md); undefined: none. */
  audit?: Auditor | undefined;
  /**
   * While set, every request waits for it before it is classified (`KubeServer.holdRequestsUntil`:
   * a warm start's snapshots being restored); cleared once it settles.
   */
  held?: Promise<void> | undefined;
}

/** One request as it moves through the steps. */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The origin-form target (`/path?query`). */
  readonly url: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly method: string;
  readonly longRunning: boolean;
  /** Replaced by `admit` when the identity sends a cached read upstream. */
  decision: Delegation;
  /** Who asked (set by `admit`). */
  identity: ClientIdentity | undefined;
  /** The authorization outcome and whether it came from the decision cache (log line). */
  authz: AuthzDecision | undefined;
  authzCached: boolean | undefined;
  /** Why the request goes upstream; undefined while the cache serves it. */
  reason: UpstreamReason | undefined;
  /** What the request hooks want to hear of this request (set by `notify`). */
  observer?: RequestObserver | undefined;
  /** Releases the slot held (idempotent); replaced when the request moves to other slots. */
  release: () => void;
  readonly abort: AbortController;
  /** When the request was admitted (ms, the serve clock). */
  started: number;
  /** Called once the steps returned (armed by `observe`). */
  stepsDone: () => void;
  /** The proxy refused the request (401, 403, 429): `record` counts only its code. */
  refused: boolean;
  /** The target was `*`, sent upstream as `/*` (`asterisk-target.ts`). */
  readonly asterisk: boolean;
  /** When the request arrived (µs since the epoch), for its audit events; 0 without audit. */
  readonly received: number;
  /** The authorization decision's reason (SubjectAccessReview), for the audit annotations. */
  authzReason?: string | undefined;
  /** The request's audit event (set by `auditRequest` or a refusal); completed by `record`. */
  audit?: RequestAudit | undefined;
}

type Next = 'next' | 'done';
type Step = (l: Lifecycle, x: Exchange) => Next | Promise<Next>;

const SERVE: Record<CacheVerb, CacheHandler> = { list: serveList, get: serveGet, watch: serveWatch };

const noop = () => {};

/** The code recorded for a request whose client left before it was answered (never sent). */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * The origin-form (`/path?query`) of a request target. An absolute-form target
 * (`GET http://host/api/v1/pods`, RFC 9112 §3.2.2: what clients send to an HTTP proxy) is
 * served by the apiserver (Go's server) as its path; passed on verbatim it failed upstream
 * (HTTP/2 `:path` must be a path: 503 "Stream closed with error code NGHTTP2_PROTOCOL_ERROR").
 */
export function originForm(target: string): string {
  const m = /^https?:\/\/[^/?#]*(.*)$/i.exec(target);
  if (!m) return target;
  const rest = m[1]!;
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** Step 1: parses the target (rewriting `req.url` to origin form) and takes the delegation decision. */
export function classify(l: Lifecycle, req: IncomingMessage, res: ServerResponse): Exchange {
  const asterisk = isAsteriskTarget(req.url);
  const url = asterisk ? ASTERISK_STAND_IN : originForm(req.url ?? '/');
  req.url = url;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = parseGoQuery(q < 0 ? '' : url.slice(q + 1));
  const method = req.method ?? 'GET';
  const decision = delegate(l.registry, method, path, query, req.headers);
  return {
    req,
    res,
    url,
    path,
    query,
    method,
    longRunning: isLongRunning(path, query),
    decision,
    identity: undefined,
    authz: undefined,
    authzCached: undefined,
    reason: decision.kind === 'upstream' ? decision.reason : undefined,
    release: noop,
    abort: new AbortController(),
    started: 0,
    stepsDone: noop,
    refused: false,
    asterisk,
    received: l.audit ? l.audit.now() : 0,
  };
}

/**
 * Step 2: a slot of the cap the request counts against, or 429 (counted in
 * `requests_refused_total` only: `record` is not armed yet).
 */
function limit(l: Lifecycle, x: Exchange): Next {
  const short = x.decision.kind === 'cache' ? l.inflight : l.upstreamInflight;
  const release = (x.longRunning ? l.watchers : short).tryAcquire();
  if (!release) {
    writeStatus(x.res, tooManyRequests(TOO_MANY_REQUESTS, 1));
    l.metrics?.refusedRequests.inc({ code: '429' });
    return 'done';
  }
  x.release = release;
  return 'next';
}

/** Step 3: aborts the request's waits when the client leaves early; arms `record`. */
function observe(l: Lifecycle, x: Exchange): Next {
  x.started = l.serve.clock.now();
  let pending = 2;
  const settle = () => {
    if (--pending === 0) record(l, x);
  };
  x.res.once('close', () => {
    // Abort only when the client left early: an abort builds an exception with a stack trace,
    // measurable on every request (bench: 3% of busy CPU).
    if (!x.res.writableFinished) x.abort.abort();
    settle();
  });
  x.stepsDone = settle;
  return 'next';
}

/** Moves a request to the slots of what it now is: an upstream short request or a long-running one. */
function moveToUpstreamSlot(l: Lifecycle, x: Exchange): Next {
  x.release();
  const again = x.longRunning ? l.watchers.tryAcquire() : l.upstreamInflight.tryAcquire();
  if (!again) {
    writeStatus(x.res, tooManyRequests(TOO_MANY_REQUESTS, 1));
    x.refused = true;
    return 'done';
  }
  x.release = again;
  return 'next';
}

/**
 * Step 4: who asks. A refusal (401, 403) is answered here; a cached read whose identity may not
 * be served from the cache goes upstream with the reason (`unauthenticated`, `other-identity`,
 * `authorization-error`).
 */
async function admit(l: Lifecycle, x: Exchange): Promise<Next> {
  if (!l.access) return 'next';
  const d = x.decision;
  const a = await l.access.admit(
    x.req,
    d.kind === 'cache' ? { verb: d.verb, info: d.info, query: x.query } : undefined,
  );
  x.identity = a.identity;
  x.authz = a.decision;
  x.authzCached = a.cached;
  x.authzReason = a.reason;
  if (a.kind === 'refuse') {
    if (l.audit) await auditRefusal(l.audit, l.access, x, a);
    writeStatus(x.res, a.status);
    x.refused = true;
    return 'done';
  }
  if (a.upstream === undefined || d.kind !== 'cache') return 'next';
  x.decision = { kind: 'upstream', reason: a.upstream, info: d.info, ...(d.needs ? { needs: d.needs } : {}) };
  x.reason = a.upstream;
  return moveToUpstreamSlot(l, x);
}

/**
 * Step 4c: the audit of a request the proxy answers itself (a cached read), or, with
 * `--audit-passed-upstream`, of one passed upstream (`audit-steps.ts`). In `blocking-strict`
 * mode a `RequestReceived` event that cannot be written is a 500 (the apiserver's).
 */
async function auditRequest(l: Lifecycle, x: Exchange): Promise<Next> {
  if (!l.audit) return 'next';
  const ok = await auditStart(
    l.audit,
    l.access,
    x,
    {
      ...(x.authz ? { decision: x.authz } : {}),
      ...(x.authzReason !== undefined ? { reason: x.authzReason } : {}),
    },
    x.decision.kind === 'cache' ? undefined : (x.reason ?? ''),
  );
  return ok ? 'next' : 'done';
}

/** Step 5: the watch cache answers, or returns the reason the request goes upstream after all. */
async function serveFromCache(l: Lifecycle, x: Exchange): Promise<Next> {
  const d = x.decision;
  if (d.kind !== 'cache') return 'next';
  // A cached watch holds a watcher slot of its own (taken in serveWatch), not this one.
  if (d.verb === 'watch') x.release();
  let reason: UpstreamReason | undefined;
  try {
    reason = await SERVE[d.verb](d.cache, d.info, x.query, x.res, l.serve, x.abort.signal);
  } catch (err) {
    if (!x.res.headersSent) writeStatus(x.res, err);
    return 'done';
  }
  if (reason === undefined) return 'done';
  x.reason = reason;
  auditHandedUpstream(x, reason);
  // The client left while the request waited for the cache: nobody would read the answer, and
  // the apiserver would still build it (a full LIST). Nothing is sent upstream.
  if (reason === 'aborted' || x.abort.signal.aborted) {
    x.reason = 'aborted';
    return 'done';
  }
  // The request moves to the slots of what it now is: an upstream short request, or a watch
  // (whose slot was handed back above) that must count against --max-watchers.
  return moveToUpstreamSlot(l, x);
}

/**
 * Step 6: the apiserver answers. Answers about a cached resource feed the write tracker: a
 * write's RV (read-your-writes), and the RV a LIST/GET answer showed the client (so that a
 * later RV="" read is never answered from an older cache); an answer whose RV cannot be read
 * makes the resource "blind" until one can (`write-tracker.ts`).
 */
async function passUpstream(l: Lifecycle, x: Exchange): Promise<Next> {
  const observer = x.observer;
  const endings = { track: l.track };
  await passThrough(x.req, x.res, {
    upstream: l.upstream,
    longRunning: x.longRunning,
    log: l.log,
    ...(observer?.passedThrough ? observer.passedThrough(x.reason, endings) : endings),
    ...(x.identity ? { identity: x.identity } : {}),
    ...(l.access
      ? {
          delegatedAuth: l.access.o.delegatedAuth,
          impersonateCertificateClients: l.access.o.impersonateCertificateClients,
          impersonationRights: l.access.o.impersonationRights,
        }
      : {}),
    ...tee(l, x),
    ...(observer?.upstreamStatus ? { onStatus: (code: number) => observer.upstreamStatus?.(code) } : {}),
    ...(x.asterisk ? { rewriteAnswer: asteriskAnswer } : {}),
  });
  return 'done';
}

/**
 * Step 4b: the request hooks (`request-hooks.ts`) hear of an admitted request for a resource,
 * with the reason it now goes upstream (`other-identity` …). After `admit`, so that a client the
 * proxy refuses (401, 403, 429) is never seen: it can neither start a cache (the proxy's memory,
 * its upstream watches) nor keep one from going idle.
 */
function notify(l: Lifecycle, x: Exchange): Next {
  const info = x.decision.info;
  if (l.hooks.length === 0 || !info) return 'next';
  x.observer = observeRequest(l.hooks, {
    info,
    method: x.method,
    query: x.query,
    headers: x.req.headers,
    longRunning: x.longRunning,
    reason: x.reason,
    ...(x.decision.needs ? { needs: x.decision.needs } : {}),
  });
  return 'next';
}

/** The read-your-writes tee of {@link passUpstream} (`read-your-writes/tracked-answers.ts`). */
function tee(l: Lifecycle, x: Exchange): { tee: AnswerTee } | Record<string, never> {
  const t = answerTeeFor(l.registry, l.writes, l.serve.clock, {
    info: x.decision.info,
    method: x.method,
    query: x.query,
    longRunning: x.longRunning,
    reason: x.reason,
    started: x.started,
  });
  return t ? { tee: t } : {};
}

/** The steps after {@link classify}, in the order they run. */
export const STEPS: readonly Step[] = [
  limit,
  observe,
  admit,
  notify,
  auditRequest,
  serveFromCache,
  passUpstream,
];

/**
 * Last: the request counter (`reason` "" for cache answers), the latency histogram (not for
 * watches) and the debug line `{"msg":"request","served_from":…,"reason":…}`. A refused request
 * (401, 403, 429) counts only in `requests_refused_total{code}`: its path names nothing the
 * proxy vouches for, so it never makes a series. The resource labels are bounded
 * (`metric-labels.ts`): an unknown name may wait for a discovery refresh before it is counted.
 */
function record(l: Lifecycle, x: Exchange): void {
  x.audit?.complete();
  const info = x.decision.info;
  const servedFrom: ServedFrom =
    x.reason === undefined ? 'cache' : x.reason === 'aborted' ? 'none' : 'upstream';
  const reason = x.reason ?? '';
  const verb = requestVerb(x.method, info, isWatchParam(x.query.get('watch')));
  // Nothing was answered to a client that left: 499 (nginx's "client closed request").
  const code = x.reason === 'aborted' ? CLIENT_CLOSED_REQUEST : x.res.statusCode;
  const ms = l.serve.clock.now() - x.started;
  const m = l.metrics;
  if (m && x.refused) m.refusedRequests.inc({ code: boundCode(code) });
  else if (m) {
    // Every label bounded (metric-labels.ts): client-chosen paths must not make new series.
    const histogram = verb !== 'WATCH' && !x.longRunning;
    m.resourceLabels.bound(
      {
        group: info?.group ?? '',
        version: info?.version ?? '',
        resource: info?.resource ?? '',
        subresource: subresourceLabel(info?.subresource),
      },
      (b) => {
        const labels = { verb: boundVerb(verb), ...b, served_from: servedFrom };
        m.requests.inc({ ...labels, code: boundCode(code), reason });
        if (histogram) m.requestDuration.observe(labels, ms / 1000);
      },
    );
  }
  if (l.log.isLevelEnabled('debug'))
    l.log.debug(
      {
        method: x.method,
        url: x.url,
        verb,
        code,
        served_from: servedFrom,
        reason,
        ms,
        ...(x.identity ? { user: userOf(x.identity) } : {}),
        ...(x.authz ? { decision: x.authz, cached: x.authzCached ?? false } : {}),
      },
      'request',
    );
}

/** The username for the log line: proved by TokenReview or certificate, else "" (never a token). */
function userOf(id: ClientIdentity): string {
  return id.kind === 'none' ? '' : (id.user?.username ?? '');
}

/** Runs a request through {@link classify} and {@link STEPS}; answers 500 for anything thrown. */
export async function handleRequest(l: Lifecycle, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let x: Exchange | undefined;
  try {
    if (l.held) await l.held;
    x = classify(l, req, res);
    for (const step of STEPS) if ((await step(l, x)) === 'done') return;
  } catch (err) {
    x?.audit?.panic(err);
    l.log.error({ err }, 'request failed');
    if (!res.headersSent) writeStatus(res, err);
    else res.destroy();
  } finally {
    x?.release();
    x?.stepsDone();
  }
}
