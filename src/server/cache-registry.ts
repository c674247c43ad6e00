/**
 * The caches the server answers from, by GroupVersionResource (the apiserver's storage
 * registry: one `Cacher` per resource, `storage/cacher`). Which request a cache may answer is
 * decided by `delegate.ts`.
 */
import type { KubeObject } from '../apimachinery/object.ts';
import { isScoped, objectInScope } from '../apimachinery/resource-scope.ts';
import type { ServedCache } from './cache-api.ts';

/** Caches by `group/version/resource`. */
export class CacheRegistry {
  #byGvr = new Map<string, ServedCache>();
  #byGroupResource = new Map<string, ServedCache>();
  /**
   * The namespace every cache of a namespaced resource is restricted to (`--namespace`), if any:
   * the default of {@link namespaceOf} for a cache whose resource names none.
   */
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

  /** Removes the cache of a resource (no longer cacheable); its requests then go upstream. */
  remove(c: ServedCache): void {
    const { group, version, resource } = c.resource.gvr;
    if (this.#byGvr.get(`${group}/${version}/${resource}`) === c)
      this.#byGvr.delete(`${group}/${version}/${resource}`);
    if (this.#byGroupResource.get(`${resource}.${group}`) === c)
      this.#byGroupResource.delete(`${resource}.${group}`);
  }

  lookup(group: string, version: string, resource: string): ServedCache | undefined {
    return this.#byGvr.get(`${group}/${version}/${resource}`);
  }

  /** Whether some version of `group/resource` is cached. */
  cachesGroupResource(group: string, resource: string): boolean {
    return this.#byGroupResource.has(`${resource}.${group}`);
  }

  /**
   * The one namespace cache `c` holds and answers: its resource's own (`ResourceInfo.namespace`,
   * a namespace-restricted on-demand cache), else `--namespace`; undefined for all namespaces and
   * for cluster-scoped resources.
   */
  namespaceOf(c: ServedCache): string | undefined {
    return c.resource.namespaced ? (c.resource.namespace ?? this.namespace) : undefined;
  }

  /**
   * Whether a write to `group/resource` in `namespace` (undefined: cluster-wide path) can show
   * up in the cache, so that read-your-writes must track it: the resource is cached and, for a
   * namespace-restricted cache ({@link namespaceOf}: `--namespace`, or an on-demand cache of one
   * namespace), the write is to that namespace (such a cache never sees the events of other
   * namespaces: tracking them stalled every consistent read until an upstream bookmark). A
   * cluster-wide write of a namespaced resource (deletecollection on `/api/v1/pods`) is tracked
   * for a namespace-restricted cache too: it may delete objects of the cached namespace.
   */
  tracksWritesTo(group: string, resource: string, namespace: string | undefined): boolean {
    const c = this.#byGroupResource.get(`${resource}.${group}`);
    if (!c) return false;
    const held = this.namespaceOf(c);
    if (held === undefined || namespace === undefined) return true;
    return namespace === held;
  }

  /**
   * For a scoped cache (issue 13): may the object a write or GET answered through the proxy be
   * in this cache, so that read-your-writes must wait for it? A scoped cache never sees the
   * events of objects outside its scope (like a `--namespace` cache and other namespaces):
   * tracking their RVs stalled every consistent read of the cache until an upstream bookmark.
   * `obj` is the answer's whole object (JSON, complete), or undefined when the answer cannot be
   * read that far (a prefix, protobuf, a Status, a list): then it may (conservative). True when
   * the object is in the cache now (an update moving it out of the scope is a DELETED event the
   * cache will see), or it matches the scope (or the cache cannot evaluate the scope's fields).
   * Unscoped caches: always true.
   */
  mayHold(
    group: string,
    resource: string,
    namespace: string | undefined,
    obj: KubeObject | undefined,
  ): boolean {
    const c = this.#byGroupResource.get(`${resource}.${group}`);
    if (!c || !isScoped(c.resource.scope) || obj === undefined) return true;
    const name = obj.metadata?.name;
    if (typeof name !== 'string' || name === '') return true;
    const ns = c.resource.namespaced ? (obj.metadata.namespace ?? namespace) : undefined;
    if (c.get(ns, name) !== undefined) return true;
    return objectInScope(c.resource, obj) !== false;
  }

  all(): ServedCache[] {
    return [...this.#byGvr.values()];
  }
}
