/**
 * The caches the server answers from, by GroupVersionResource (the apiserver's storage
 * registry: one `Cacher` per resource, `storage/cacher`). Which request a cache may answer is
 * decided by `delegate.ts`.
 */
import type { ServedCache } from './cache-api.ts';

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
   * Whether a write to `group/resource` in `namespace` (undefined: cluster-wide path) can show
   * up in the cache, so that read-your-writes must track it: the resource is cached and, with
   * `--namespace`, the write is to that namespace (a namespaced cache never sees the events of
   * other namespaces: tracking them stalled every consistent read until an upstream bookmark).
   * A cluster-wide write of a namespaced resource (deletecollection on `/api/v1/pods`) is
   * tracked in `--namespace` mode too: it may delete objects of the cached namespace.
   */
  tracksWritesTo(group: string, resource: string, namespace: string | undefined): boolean {
    const c = this.#byGroupResource.get(`${resource}.${group}`);
    if (!c) return false;
    if (this.namespace === undefined || !c.resource.namespaced || namespace === undefined) return true;
    return namespace === this.namespace;
  }

  all(): ServedCache[] {
    return [...this.#byGvr.values()];
  }
}
