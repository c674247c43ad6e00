/**
 * Cache or upstream? A request is served from the cache only when the cache can answer it
 * exactly as the apiserver would (docs/design.md §3 serving table): a GET of a cached resource in
 * its cached GroupVersion (collection or single object, no subresource), inside the namespace
 * the cache holds, from a client that accepts plain JSON and impersonates no one. Everything
 * else is passed through. Finer decisions that depend on query values (limit/continue, unknown
 * field selectors, freshness) are taken by the handlers, which may still pass through.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { acceptsPlainJson } from '../apimachinery/accept.ts';
import { isWatchParam, parseResourcePath, type ResourceRequest } from '../apimachinery/request-info.ts';
import type { ServedCache } from './cache-api.ts';

/** The cache-servable verbs. */
export type CacheVerb = 'list' | 'get' | 'watch';

export type Route =
  | { kind: 'cache'; verb: CacheVerb; cache: ServedCache; info: ResourceRequest }
  | { kind: 'upstream'; info?: ResourceRequest };

/** Caches by `group/version/resource`. */
export class CacheRegistry {
  #byGvr = new Map<string, ServedCache>();
  #byGroupResource = new Map<string, ServedCache>();
  /** The namespace every cache is restricted to (`--namespace`), if any. */
  readonly namespace: string | undefined;

  constructor(caches: ServedCache[], namespace?: string) {
    this.namespace = namespace;
    for (const c of caches) this.add(c);
  }

  /** Adds (or replaces) the cache of a resource, e.g. once its discovery succeeded. */
  add(c: ServedCache): void {
    const { group, version, resource } = c.resource.gvr;
    this.#byGvr.set(`${group}/${version}/${resource}`, c);
    this.#byGroupResource.set(`${resource}.${group}`, c);
  }

  lookup(group: string, version: string, resource: string): ServedCache | undefined {
    return this.#byGvr.get(`${group}/${version}/${resource}`);
  }

  /** Whether some version of `group/resource` is cached (writes to it are tracked). */
  cachesGroupResource(group: string, resource: string): boolean {
    return this.#byGroupResource.has(`${resource}.${group}`);
  }

  all(): ServedCache[] {
    return [...this.#byGvr.values()];
  }
}

/** Classifies a request. `path` excludes the query string. */
export function route(
  registry: CacheRegistry,
  method: string,
  path: string,
  query: URLSearchParams,
  headers: IncomingHttpHeaders,
): Route {
  const info = parseResourcePath(path);
  if (!info) return { kind: 'upstream' };
  const up: Route = { kind: 'upstream', info };
  if (method !== 'GET' || info.subresource !== undefined) return up;
  const cache = registry.lookup(info.group, info.version, info.resource);
  if (!cache) return up;
  // Names the apiserver rejects before storage (`.`, `..`, containing `/` or `%`): 400 or 404,
  // never the cache's "not found" or a list.
  if (!isValidPathSegment(info.namespace) || !isValidPathSegment(info.name)) return up;
  const r = cache.resource;
  if (!r.namespaced && info.namespace !== undefined) return up;
  // `/api/v1/pods/NAME` is not a valid path for a namespaced resource: the apiserver answers it.
  if (r.namespaced && info.name !== undefined && info.namespace === undefined) return up;
  if (r.namespaced && registry.namespace !== undefined && info.namespace !== registry.namespace) return up;
  if (Object.keys(headers).some((h) => h.startsWith('impersonate-'))) return up;
  const accept = headers.accept;
  if (!acceptsPlainJson(Array.isArray(accept) ? accept.join(',') : accept)) return up;
  const watch = isWatchParam(query.get('watch'));
  // The apiserver indents non-streaming JSON for `pretty=true` and for curl/Wget/browsers.
  if (!watch && isPrettyPrint(query, headers['user-agent'])) return up;
  if (info.name !== undefined) {
    // A single object with ?watch is the apiserver's GET handler's business; keep it exact.
    if (watch) return up;
    return r.verbs.includes('get') ? { kind: 'cache', verb: 'get', cache, info } : up;
  }
  const verb: CacheVerb = watch ? 'watch' : 'list';
  return r.verbs.includes(verb) ? { kind: 'cache', verb, cache, info } : up;
}

/**
 * The apiserver's `isPrettyPrint` (`handlers/negotiation`… `responsewriters`): a `pretty` query
 * value parsed as a Go bool, else a User-Agent starting with `curl`, `Wget` or `Mozilla/5.0`.
 */
export function isPrettyPrint(query: URLSearchParams, userAgent: string | undefined): boolean {
  const pp = query.get('pretty');
  if (pp !== null && pp !== '') return ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(pp);
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
