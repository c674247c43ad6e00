/**
 * Read-your-writes bookkeeping (DESIGN.md §3, the RV="" row): for each cached resource, the
 * highest resourceVersion returned by a write this proxy passed upstream. A "consistent" read is
 * served from the cache only once the cache has reached it, so a client that creates an object
 * through the proxy and lists right after always sees it.
 */

/** Key of a resource for write tracking: RVs are etcd revisions, shared by all versions of a group/resource. */
export function writeKey(group: string, resource: string): string {
  return `${resource}.${group}`;
}

export class WriteTracker {
  #max = new Map<string, bigint>();

  /** Remembers that a write to `key` returned `rv` (keeps the maximum). */
  record(key: string, rv: bigint): void {
    const cur = this.#max.get(key);
    if (cur === undefined || rv > cur) this.#max.set(key, rv);
  }

  /** The RV a consistent read of `key` must see; 0 when nothing was written through the proxy. */
  required(key: string): bigint {
    return this.#max.get(key) ?? 0n;
  }
}

/**
 * Extracts `metadata.resourceVersion` from a write's JSON answer (an object, a list for
 * deletecollection, or a Status without one). undefined when absent or not a uint64.
 */
export function resourceVersionOf(body: Buffer): bigint | undefined {
  try {
    const v = JSON.parse(body.toString('utf8')) as { metadata?: { resourceVersion?: unknown } };
    const rv = v?.metadata?.resourceVersion;
    if (typeof rv !== 'string' || !/^[0-9]{1,20}$/.test(rv)) return undefined;
    return BigInt(rv);
  } catch {
    return undefined;
  }
}
