/**
 * Cache or upstream? The one place that names the decision, after the apiserver's
 * `storage/cacher/delegator.go` (the `CacheDelegator` routes each read to the watch cache or to
 * etcd by `ShouldDelegateList` and the `Helper` methods `ShouldDelegateExactRV`,
 * `ShouldDelegateConsistentRead`). A request is served from the cache only when the cache can
 * answer it exactly as the apiserver would (docs/design.md §3 serving table); every other request
 * is passed upstream with a reason from the closed list {@link UPSTREAM_REASONS}, which becomes
 * the `reason` label of `kube_cache_proxy_requests_total` and a field of the request's debug log
 * line (docs/delegation.md).
 *
 * The decision is taken in three stages, each returning a reason when the cache cannot answer:
 * 1. {@link delegate}: the request itself (path, method, headers; no I/O). The entry point.
 * 2. {@link listRead} / {@link getRead} / {@link watchRead}: its query options, once the handler
 *    has validated them (the apiserver's 400/422 answers come from the cache first).
 * 3. `read-your-writes/consistent-read.ts` and `serve-read.ts`: the cache's state (synced, live, fresh enough, RV inside the window),
 *    after the bounded waits for it.
 */
import type { IncomingHttpHeaders } from 'node:http';
import {
  acceptAsksPretty,
  acceptParameterNames,
  type CacheForm,
  cacheForm,
  protobufForm,
} from '../apimachinery/accept.ts';
import { parseGoDuration, parseGoQuery } from '../apimachinery/go-query.ts';
import { type ListOptions, parseResourceVersion } from '../apimachinery/list-options.ts';
import { isWatchParam, parseResourcePath, type ResourceRequest } from '../apimachinery/request-info.ts';
import { withinScope } from '../apimachinery/resource-scope.ts';
import { parseIncludeObject } from '../printers/table-encoding.ts';
import type { CacheCodec, ContinueFrom, ServedCache } from './cache-api.ts';
import type { CacheRegistry } from './cache-registry.ts';
import { tablePrinterOf } from './table-printers.ts';

/**
 * The reasons a request the cache could serve goes upstream because of the cache's state
 * (`serve-read.ts`, `serve-watch.ts`, `read-your-writes/consistent-read.ts`): the last group of {@link UPSTREAM_REASONS}.
 */
export const CACHE_STATE_REASONS = [
  /** The resource has not completed its first snapshot within the sync wait. */
  'not-synced',
  /** RV="" with `--consistent-reads=upstream`. */
  'consistent-reads-upstream',
  /** RV="" while the upstream stream is not proven live. */
  'not-live',
  /** RV="" while the cache is older than an answer passed upstream showed a client (after an outage). */
  'behind-upstream',
  /** RV="" while a write made through this proxy is not yet in the cache after the wait, or its RV is unknown. */
  'write-pending',
  /**
   * RV="" with `--consistent-reads=proven`: the upstream's current revision could not be learnt,
   * or within the freshness wait the cache neither reached it nor was proven unchanged up to it.
   */
  'freshness-unproven',
  /** RV=N (not older than): the cache did not reach N within the freshness wait. */
  'freshness-timeout',
  /** An exact RV (`resourceVersionMatch=Exact`, or `limit` with RV=N) outside the history window. */
  'exact-outside-window',
  /** A `continue` token whose snapshot RV left the history window. */
  'continue-outside-window',
  /**
   * A WATCH from RV=N below the history window that the upstream did not prove unchanged since N
   * (`cache/window-extension.ts`), where N is at or above an RV a forwarded LIST/GET of the
   * resource showed a client within the last 75 s (the LIST that started an on-demand cache):
   * the apiserver streams the events after N from its own window (other RVs below the window get
   * the cache's 410).
   */
  'watch-outside-window',
  /**
   * An Exact read or a `continue` token at an RV the upstream has compacted (the cache's
   * compaction floor, `cache/compaction-floor.ts`): the apiserver answers 410 (for a continue
   * token, with an "inconsistent" continue token).
   */
  'compacted',
  /** The client went away while the request waited for the cache: nothing is sent upstream. */
  'aborted',
] as const;

/**
 * Every reason a request is passed upstream, in the order the decision meets them. Closed:
 * a new exit needs a new entry here, a case in `test/unit/server/delegate.test.ts` and a line
 * in docs/delegation.md (both tests check it).
 */
export const UPSTREAM_REASONS = [
  // 1. The request (delegate).
  /** Not `/api/v1/…` or `/apis/G/V/…` with a resource: discovery, `/version`, `/watch/` paths. */
  'not-resource-path',
  /** Any method but GET: writes, HEAD, OPTIONS. */
  'not-get',
  /** A subresource (`status`, `log`, `scale`, `exec`, …). */
  'subresource',
  /** No version of this resource is cached. */
  'not-cached',
  /** The resource is cached, but in another GroupVersion. */
  'other-version',
  /** A name or namespace the apiserver rejects before storage (`.`, `..`, `/`, `%`). */
  'invalid-name',
  /** A cluster-scoped resource under `/namespaces/NS/`. */
  'namespace-for-cluster-scoped',
  /** A namespaced resource's object by name without a namespace (`/api/v1/pods/NAME`). */
  'cluster-path-for-namespaced',
  /**
   * The cache holds one namespace (`--namespace`, or an on-demand cache restricted to the
   * namespace that started it) and the request is for another namespace, or all of them.
   */
  'namespace-outside-cache',
  /** An `Impersonate-*` header. */
  'impersonation',
  // 1b. Who asks (`auth/access-control.ts`, docs/design.md §4).
  /** `--delegated-auth` and no credential (or one the proxy cannot check): the apiserver's anonymous rules decide. */
  'unauthenticated',
  /** Simple mode: a credential of another identity than the proxy's. */
  'other-identity',
  /** `--delegated-auth`: the SubjectAccessReview failed; the apiserver decides with the client's credential. */
  'authorization-error',
  /**
   * An `Accept` the cache cannot answer in JSON: Table, protobuf-, CBOR- or YAML-only, or a
   * PartialObjectMetadata conversion the verb does not take (`…List` on a GET or WATCH, the
   * single kind on a LIST: the apiserver's 406 or its own answer).
   */
  'media-type',
  /** A Table of a kind the cache does not print (`printers/registry.ts`), or a bad `includeObject`. */
  'table-printer',
  /** `?watch` on a single object's path. */
  'single-object-watch',
  /**
   * A query parameter or `Accept` media-type parameter the cache does not implement for the
   * verb ({@link CACHE_QUERY_PARAMETERS}, {@link CACHE_ACCEPT_PARAMETERS}: a future
   * apiserver's), or a `timeout` on a LIST or GET that is not a Go duration (the
   * apiserver's 400).
   */
  'unknown-parameter',
  /** The resource does not offer the verb (`get`, `list` or `watch`) in discovery. */
  'verb-not-supported',
  /**
   * A scoped cache (`--resources pods[fieldSelector=…]`): a LIST/WATCH whose selectors do not
   * contain every requirement of the scope (decided in `delegate`), or a GET by name of an object
   * the scoped cache does not hold (serve-read.ts: the cache cannot prove a 404, the object may
   * exist outside the scope).
   */
  'outside-scope',
  // 2. Its options (listRead, getRead, watchRead; the field selector in the handlers).
  /** A field selector on a field the cache does not index (only the apiserver knows them all). */
  'field-selector-unknown',
  /** A resourceVersion that is not a canonical decimal uint64 (the apiserver words the error). */
  'rv-unparsable',
  /** `continue` together with `resourceVersion=N` (the apiserver answers 400). */
  'continue-with-rv',
  /** A `continue` token malformed in a way only the apiserver words exactly. */
  'continue-undecodable',
  /**
   * A `shardSelector` while the proxy does not yet know whether its upstream honours it (the
   * ShardedListAndWatch gate): its probe of the resource is under way or failed (`shard-support.ts`).
   */
  'shard-support-unknown',
  /**
   * A `shardSelector` the cache does not decide: an expression outside the grammar a shard
   * selector uses (a CEL syntax error, another operator), which the apiserver words.
   */
  'shard-selector-unparsed',
  /** Only a protobuf answer would do (the Accept picks it, no JSON clause) and `--protobuf-answers=json`. */
  'protobuf-off',
  /**
   * Only a protobuf answer would do and the upstream apiserver's minor version is not the protobuf
   * schema table's (or not known yet): the table may not give its bytes.
   */
  'protobuf-version',
  /** A protobuf answer the encoder cannot write exactly (`CannotEncode`: raw JSON, an unknown field). */
  'protobuf-inexact',
  // 3. The cache's state (read-your-writes/consistent-read.ts, serve-read.ts).
  ...CACHE_STATE_REASONS,
] as const;

/** Why a request went upstream: one of {@link UPSTREAM_REASONS}. */
export type UpstreamReason = (typeof UPSTREAM_REASONS)[number];

/** The cache-servable verbs. */
export type CacheVerb = 'list' | 'get' | 'watch';

/** The answer of {@link delegate}. `info` is absent only for `not-resource-path`. */
export type Delegation = (
  | { kind: 'cache'; verb: CacheVerb; cache: ServedCache; info: ResourceRequest }
  | { kind: 'upstream'; reason: UpstreamReason; info?: ResourceRequest }
) & {
  /**
   * Another resource whose cache the answer reads (a custom resource's Table: its CRD, from the
   * `customresourcedefinitions.apiextensions.k8s.io` v1 cache), cached or not: `--resources=auto`
   * starts it as for a LIST of it, and counts the request as a use of it.
   */
  needs?: ResourceRequest;
};

/** The CustomResourceDefinitions a custom resource's Table is printed from (`table-printers.ts`). */
export const CRDS: ResourceRequest = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  resource: 'customresourcedefinitions',
};

/**
 * Classifies a request: served from the cache (which verb, which cache) or passed upstream, and
 * why. A GET of a cached resource in its cached GroupVersion (collection or single object, no
 * subresource), inside the namespace the cache holds, from a client that accepts plain JSON (or
 * the JSON PartialObjectMetadata form its verb takes) and impersonates no one. `path` excludes the query string; no I/O, never throws.
 */
export function delegate(
  registry: CacheRegistry,
  method: string,
  path: string,
  query: URLSearchParams,
  headers: IncomingHttpHeaders,
): Delegation {
  const info = parseResourcePath(path);
  if (!info) return { kind: 'upstream', reason: 'not-resource-path' };
  const up = (reason: UpstreamReason): Delegation => ({ kind: 'upstream', reason, info });
  if (method !== 'GET') return up('not-get');
  if (info.subresource !== undefined) return up('subresource');
  const cache = registry.lookup(info.group, info.version, info.resource);
  if (!cache)
    return up(registry.cachesGroupResource(info.group, info.resource) ? 'other-version' : 'not-cached');
  // Names the apiserver rejects before storage (`.`, `..`, containing `/` or `%`): 400 or 404,
  // never the cache's "not found" or a list.
  if (!isValidPathSegment(info.namespace) || !isValidPathSegment(info.name)) return up('invalid-name');
  const r = cache.resource;
  if (!r.namespaced && info.namespace !== undefined) return up('namespace-for-cluster-scoped');
  // `/api/v1/pods/NAME` is not a valid path for a namespaced resource: the apiserver answers it.
  if (r.namespaced && info.name !== undefined && info.namespace === undefined)
    return up('cluster-path-for-namespaced');
  // A namespace-restricted cache (`--namespace`, or an on-demand cache of one namespace) answers
  // only that namespace: never another one, never all namespaces.
  const held = registry.namespaceOf(cache);
  if (held !== undefined && info.namespace !== held) return up('namespace-outside-cache');
  const form = formReason(info, query, headers);
  if (form) return up(form);
  const table = requestForm(headers)?.form === 'table';
  // A custom resource's Table is printed from its CRD: that cache is needed too.
  const needs = table && !r.builtIn ? { needs: CRDS } : {};
  if (table && !tablePrinterOf(registry, r)) return { ...up('table-printer'), ...needs };
  if (info.name !== undefined)
    return r.verbs.includes('get')
      ? { kind: 'cache', verb: 'get', cache, info, ...needs }
      : up('verb-not-supported');
  const verb: CacheVerb = isWatchParam(query.get('watch')) ? 'watch' : 'list';
  if (!r.verbs.includes(verb)) return up('verb-not-supported');
  // A scoped cache: decided here, before any SubjectAccessReview or cache slot is spent on a
  // request the cache cannot answer. A selector that does not parse is outside too (the
  // apiserver words its 400).
  if (!withinScope(r.scope, query.get('labelSelector') ?? '', query.get('fieldSelector') ?? ''))
    return up('outside-scope');
  return { kind: 'cache', verb, cache, info, ...needs };
}

/**
 * The checks of {@link delegate} on who asks and in which form, whatever the cache: an
 * `Impersonate-*` header, an `Accept` the cache cannot answer (or a PartialObjectMetadata kind
 * the verb does not take), `?watch` on one object, a parameter the cache does not implement.
 * Undefined: a cache could. Indented JSON is answered too ({@link indentedJson}).
 */
function formReason(
  info: ResourceRequest,
  query: URLSearchParams,
  headers: IncomingHttpHeaders,
): UpstreamReason | undefined {
  if (Object.keys(headers).some((h) => h.startsWith('impersonate-'))) return 'impersonation';
  const form = requestForm(headers);
  if (!form) return 'media-type';
  const watch = isWatchParam(query.get('watch'));
  if (form.form === 'metadata') {
    // GET and WATCH convert objects (PartialObjectMetadata), a LIST its list (…List); the
    // apiserver answers the other combinations 406 (checked on v1.37.2), or a watch with …List
    // an empty stream: theirs to word.
    const single = info.name !== undefined || watch;
    if ((form.kind === 'PartialObjectMetadata') !== single) return 'media-type';
  }
  // A single object with ?watch is the apiserver's GET handler's business; keep it exact.
  if (info.name !== undefined && watch) return 'single-object-watch';
  const verb: CacheVerb = info.name !== undefined ? 'get' : watch ? 'watch' : 'list';
  // TableOptions' `includeObject`: another value is the apiserver's 400.
  if (form.form === 'table' && !parseIncludeObject(query.get('includeObject'))) return 'table-printer';
  if (!knownParameters(verb, query, headers.accept, form.form === 'table')) return 'unknown-parameter';
  return undefined;
}

/**
 * `metav1.ListOptions` as the apiserver decodes it from the query (`Convert_url_Values_To_v1_ListOptions`).
 * `shardSelector` (KEP-5866, alpha in 1.36) is decided by the handlers (`shard-support.ts`):
 * the cache shards as its upstream does, or ignores it as an upstream without the gate.
 */
const LIST_OPTIONS = [
  'labelSelector',
  'fieldSelector',
  'watch',
  'allowWatchBookmarks',
  'resourceVersion',
  'resourceVersionMatch',
  'timeoutSeconds',
  'limit',
  'continue',
  'sendInitialEvents',
  'shardSelector',
] as const;

/**
 * What every verb takes besides its options: `pretty` (negotiation's `isPrettyPrint`: a LIST's
 * or GET's JSON answer is indented, {@link indentedJson}; a watch ignores it) and `timeout` (the request
 * deadline filter; client-go sends it whenever its request has a timeout: `rest.Config.Timeout`,
 * kubectl `--request-timeout`, a typed client's `timeoutSeconds`).
 */
const EVERY_VERB = ['pretty', 'timeout'] as const;

/**
 * The query parameters the cache implements, per verb: every other parameter goes upstream as
 * `unknown-parameter`, so a parameter the apiserver learns later is never answered from the
 * cache as if it were absent (a sharded LIST was answered unfiltered). A LIST and a
 * WATCH decode the whole ListOptions as the apiserver does (`list-options.ts`; on a watch
 * `limit` is ignored and `continue` meets the apiserver's 422, on a list `allowWatchBookmarks`
 * is ignored, `sendInitialEvents` meets its 422), a GET only `resourceVersion` (GetOptions;
 * `export` is the apiserver's 400, passed upstream).
 */
export const CACHE_QUERY_PARAMETERS: Readonly<Record<CacheVerb, ReadonlySet<string>>> = {
  list: new Set([...LIST_OPTIONS, ...EVERY_VERB]),
  watch: new Set([...LIST_OPTIONS, ...EVERY_VERB]),
  get: new Set(['resourceVersion', ...EVERY_VERB]),
};

/**
 * The `Accept` media-type parameters the cache implements (`apimachinery/accept.ts`; `q` is
 * goautoneg's), plus `charset`: the apiserver's `acceptMediaTypeOptions`
 * (`endpoints/handlers/negotiation/negotiate.go`) files it under `Unrecognized`, which nothing
 * reads, and answers `Content-Type: application/json` with the same bytes whatever its value
 * (checked on v1.37.2: `charset=utf-8`, `charset=iso-8859-1`); clients add it by habit (HTTP
 * libraries, `Accept: application/json; charset=utf-8`). The apiserver also knows `sv` (it drops
 * the clause unless `v1`), `export` and `profile`; anything else it ignores today: all of them go
 * upstream.
 */
export const CACHE_ACCEPT_PARAMETERS: ReadonlySet<string> = new Set([
  'as',
  'g',
  'v',
  'stream',
  'pretty',
  'charset',
]);

/**
 * Whether the cache implements every query parameter and `Accept` parameter of a request of
 * `verb`, and its `timeout` value: on a LIST or GET the apiserver answers 400 for one that is
 * not a Go duration (a watch, long-running, ignores it).
 */
function knownParameters(
  verb: CacheVerb,
  query: URLSearchParams,
  accept: string | string[] | undefined,
  table: boolean,
): boolean {
  const known = CACHE_QUERY_PARAMETERS[verb];
  for (const k of query.keys()) if (!known.has(k) && !(table && k === 'includeObject')) return false;
  const timeout = query.get('timeout');
  // The deadline filter reads `Query().Get`: the first value; an empty one is no timeout.
  if (verb !== 'watch' && timeout !== null && timeout !== '' && parseGoDuration(timeout) === undefined)
    return false;
  const names = acceptParameterNames(Array.isArray(accept) ? accept.join(',') : accept);
  for (const n of names) if (!CACHE_ACCEPT_PARAMETERS.has(n)) return false;
  return true;
}

/**
 * Why no cache of the request's resource could answer it, whatever the resource's scope and
 * namespace (the request-only checks of {@link delegate}: a name the apiserver rejects, then
 * {@link formReason}); undefined when a synced cache could. `--resources=auto` starts a cache
 * only for a `not-cached` LIST or WATCH a cache could answer (issue 15: `kubectl get` asks for a
 * Table, which no cache answers, so it must not start one).
 */
export function uncacheableRequest(
  info: ResourceRequest,
  query: URLSearchParams,
  headers: IncomingHttpHeaders,
): UpstreamReason | undefined {
  if (!isValidPathSegment(info.namespace) || !isValidPathSegment(info.name)) return 'invalid-name';
  // A Table (`kubectl get`) starts no on-demand cache (one `get pods -A` would hold every pod).
  return (
    formReason(info, query, headers) ?? (requestForm(headers)?.form === 'table' ? 'media-type' : undefined)
  );
}

/**
 * The JSON form a cache answer takes for the request's `Accept` ({@link cacheForm}), else its
 * protobuf form (`protobuf-answers.ts` decides); undefined when the cache cannot answer it.
 * The serve handlers read it again from the request headers.
 */
export function requestForm(headers: IncomingHttpHeaders): CacheForm | undefined {
  const accept = Array.isArray(headers.accept) ? headers.accept.join(',') : headers.accept;
  return cacheForm(accept) ?? protobufForm(accept);
}

/**
 * How a cache read is answered: the cases of the apiserver's `ShouldDelegateList` that the cache
 * serves. Only `consistent` and `not-older-than` wait (read-your-writes/consistent-read.ts); `exact` and `continue`
 * read a snapshot from the history window.
 */
export type CacheRead =
  /** RV="": the most recent state, as far as `ShouldDelegateConsistentRead` allows. */
  | { mode: 'consistent' }
  /** RV="0" (any state), or a watch starting at RV=N without initial events. */
  | { mode: 'any'; rv: bigint }
  /** RV=N NotOlderThan: the cache must reach N first. */
  | { mode: 'not-older-than'; rv: bigint }
  /** `resourceVersionMatch=Exact`, or the legacy exact read (`limit` with RV=N): `ShouldDelegateExactRV`. */
  | { mode: 'exact'; rv: bigint }
  /** A `continue` token: the snapshot it is pinned at (`ShouldDelegateContinue`). */
  | { mode: 'continue'; from: ContinueFrom };

/** A LIST's read and its page size (items; 0 = everything). */
export type ListRead = CacheRead & { limit: number };

/**
 * The read of a validated LIST (`ShouldDelegateList`), or why it goes upstream.
 * @throws StatusError 400 for a continue token the apiserver rejects with a known message.
 */
export function listRead(opts: ListOptions, codec: CacheCodec): ListRead | UpstreamReason {
  const rv = parseResourceVersion(opts.resourceVersion);
  if (rv === null) return 'rv-unparsable';
  const exact = opts.resourceVersionMatch === 'Exact';
  // The apiserver ignores `limit` for RV="0" (any-RV) lists served by its cache.
  const limit = rv === 0n && !exact ? 0 : opts.limit;
  if (opts.continue !== '') {
    // continue with resourceVersion=N: the apiserver's own 400 ("specifying resource version is
    // not allowed when using continue", etcd3 store); the cache used to serve the page.
    if (rv !== undefined && rv !== 0n) return 'continue-with-rv';
    const from = codec.decodeContinue(opts.continue);
    if (!from) return 'continue-undecodable';
    return { mode: 'continue', from, limit };
  }
  if (rv === undefined) return { mode: 'consistent', limit };
  // A page at RV=N without resourceVersionMatch is the legacy exact read (cacher delegator.go).
  const legacyExact = opts.resourceVersionMatch === '' && limit > 0 && rv !== 0n;
  if (exact || legacyExact) return { mode: 'exact', rv, limit };
  if (rv !== 0n) return { mode: 'not-older-than', rv, limit };
  return { mode: 'any', rv, limit };
}

/** The read of a GET of one object (`resourceVersion` query value), or why it goes upstream. */
export function getRead(resourceVersion: string): CacheRead | UpstreamReason {
  const rv = parseResourceVersion(resourceVersion);
  if (rv === null) return 'rv-unparsable';
  if (rv === undefined) return { mode: 'consistent' };
  return rv === 0n ? { mode: 'any', rv } : { mode: 'not-older-than', rv };
}

/**
 * The read of a validated WATCH, or why it goes upstream. At RV="" it starts from a consistent
 * state like a consistent LIST; at RV=N with initial events that state must be at least N.
 */
export function watchRead(opts: ListOptions): CacheRead | UpstreamReason {
  const rv = parseResourceVersion(opts.resourceVersion);
  if (rv === null) return 'rv-unparsable';
  if (rv === undefined) return { mode: 'consistent' };
  if (rv !== 0n && opts.sendInitialEvents === true) return { mode: 'not-older-than', rv };
  return { mode: 'any', rv };
}

/**
 * Whether the apiserver writes a LIST's or GET's JSON answer (object, list, PartialObjectMetadata
 * or Table) indented: `NegotiateOutputMediaType` (k8s.io/apiserver v0.37.2
 * `endpoints/handlers/negotiation/negotiate.go`) swaps in the JSON `PrettySerializer` for the
 * chosen clause's `pretty=1` ({@link acceptAsksPretty}) or {@link isPrettyPrint}. Protobuf has no
 * pretty serializer, and a watch negotiates its stream serializer
 * (`NegotiateOutputMediaTypeStream`) without either: neither is ever indented, and the caller
 * asks only for a JSON LIST or GET answer. The indented bytes: `apimachinery/go-indent.ts`.
 */
export function indentedJson(url: string | undefined, headers: IncomingHttpHeaders): boolean {
  const accept = Array.isArray(headers.accept) ? headers.accept.join(',') : headers.accept;
  return isPrettyPrint(url, headers['user-agent']) || acceptAsksPretty(accept);
}

/**
 * The apiserver's `isPrettyPrint` (`handlers/negotiation/negotiate.go`) for a request's target
 * `url` (path and query as sent): a non-empty `pretty` query value parsed as a Go bool
 * (`strconv.ParseBool`: anything but 1, t, T, TRUE, true, True is false), else a User-Agent
 * starting with `curl`, `Wget` or `Mozilla/5.0`. Go reads the query only when its raw text
 * contains `pretty` (an allocation it avoids), so an encoded name (`%70retty=false`) is not read;
 * it reads it with `url.ParseQuery` ({@link parseGoQuery}), which skips a pair with a `;` or a
 * bad `%` escape: `pretty=%zz&pretty=1` is true, `pretty=1;` leaves the User-Agent to decide.
 */
export function isPrettyPrint(url: string | undefined, userAgent: string | undefined): boolean {
  const at = url?.indexOf('?') ?? -1;
  const raw = at < 0 ? '' : url!.slice(at + 1);
  if (raw.includes('pretty')) {
    const pp = parseGoQuery(raw).get('pretty');
    if (pp !== null && pp !== '') return ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(pp);
  }
  const ua = userAgent ?? '';
  return ua.startsWith('curl') || ua.startsWith('Wget') || ua.startsWith('Mozilla/5.0');
}

/**
 * `apimachinery/pkg/api/validation/path.IsValidPathSegmentName`: a decoded namespace or name
 * segment may not be `.` or `..` nor contain `/` or `%` (the apiserver answers such a name
 * 400 "Name parameter invalid", an encoded `/` 404, a namespace `..` 500). Absent is valid.
 */
export function isValidPathSegment(s: string | undefined): boolean {
  if (s === undefined) return true;
  return s !== '.' && s !== '..' && !s.includes('/') && !s.includes('%');
}
