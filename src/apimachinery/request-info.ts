/**
 * Classifies a Kubernetes API path the way the apiserver's `RequestInfoFactory` does
 * (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`), reduced to what routing needs:
 * `/api/v1/...` and `/apis/GROUP/VERSION/...`, cluster-wide, per namespace, single objects and
 * subresources. Anything else (discovery, `/version`, `/healthz`, OpenAPI, the deprecated
 * `/watch/` prefix paths) is not a resource request.
 */

const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** A resource request parsed from a URL path. */
export interface ResourceRequest {
  /** `''` for the core group. */
  group: string;
  version: string;
  resource: string;
  /** Set for `/namespaces/NS/RESOURCE...`; absent for cluster-wide or cluster-scoped paths. */
  namespace?: string;
  name?: string;
  /** e.g. `status`, `log`, `exec`; extra path segments after it are joined with `/`. */
  subresource?: string;
}

/**
 * Parses `path` (no query string, still percent-encoded). Returns undefined for anything that
 * is not a resource request. `/api/v1/namespaces` and `/api/v1/namespaces/NAME[/sub]` are the
 * namespace resource itself, as in the apiserver.
 */
export function parseResourcePath(path: string): ResourceRequest | undefined {
  const raw = path.split('/');
  if (raw[0] !== '') return undefined;
  let parts: string[];
  try {
    parts = raw.slice(1).map((p) => decodeURIComponent(p));
  } catch {
    return undefined;
  }
  if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === 'api') {
    if (parts.length < 3) return undefined;
    group = '';
    version = parts[1]!;
    rest = parts.slice(2);
  } else if (parts[0] === 'apis') {
    if (parts.length < 4) return undefined;
    group = parts[1]!;
    version = parts[2]!;
    rest = parts.slice(3);
  } else {
    return undefined;
  }
  if (rest.some((p) => p === '')) return undefined;
  // The deprecated `/watch/` and `/proxy/` prefixes: never served from the cache.
  if (rest[0] === 'watch' || rest[0] === 'proxy') return undefined;
  let namespace: string | undefined;
  // `namespaces/NAME/status|finalize` are subresources of the namespace itself (requestinfo.go).
  if (rest[0] === 'namespaces' && rest.length >= 3 && !NAMESPACE_SUBRESOURCES.has(rest[2]!)) {
    namespace = rest[1]!;
    rest = rest.slice(2);
  }
  const [resource, name, ...sub] = rest;
  if (resource === undefined) return undefined;
  const info: ResourceRequest = { group, version, resource };
  if (namespace !== undefined) info.namespace = namespace;
  if (name !== undefined) info.name = name;
  if (sub.length > 0) info.subresource = sub.join('/');
  return info;
}

/** Subresources that stream for as long as the client wants (apiserver `LongRunningRequestCheck`). */
const LONG_RUNNING_SUBRESOURCES = new Set(['attach', 'exec', 'proxy', 'log', 'portforward']);

/**
 * Whether a request may stay open indefinitely: a watch (`watch=1`, `/watch/` paths), a
 * streaming subresource, or `follow=true` (apiserver `genericfilters.BasicLongRunningRequestCheck`
 * with the `watch`/`proxy` verbs and `attach, exec, proxy, log, portforward` subresources).
 */
export function isLongRunning(path: string, query: URLSearchParams): boolean {
  if (isWatchParam(query.get('watch'))) return true;
  if (/^\/apis?\/(?:[^/]+\/){1,2}(?:watch|proxy)\//.test(path)) return true;
  const info = parseResourcePath(path);
  const sub = info?.subresource?.split('/')[0];
  return sub !== undefined && LONG_RUNNING_SUBRESOURCES.has(sub);
}

/**
 * The apiserver's boolean query conversion (`runtime.Convert_Slice_string_To_bool`): absent,
 * `"0"` and `"false"` (any case) are false; anything else, the empty string included, is true.
 */
export function isWatchParam(v: string | null): boolean {
  if (v === null) return false;
  return !(v === '0' || v.toLowerCase() === 'false');
}
