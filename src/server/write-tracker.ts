/**
 * Read-your-writes bookkeeping (docs/design.md §3, the RV="" row). For each cached resource:
 * - the highest resourceVersion returned by a write this proxy passed upstream, and
 * - deletions whose answer carries no usable RV: an immediate DELETE answers a Status
 *   (`details.name/uid`, no RV) and a deletecollection answers the deleted items at their
 *   pre-delete RVs. For those the cache is fresh once the object is gone from it.
 * A "consistent" read is served from the cache only once both hold, so a client that writes
 * through the proxy and reads right after always sees its write.
 */

/** Key of a resource for write tracking: RVs are etcd revisions, shared by all versions of a group/resource. */
export function writeKey(group: string, resource: string): string {
  return `${resource}.${group}`;
}

/** An object deleted through the proxy that the cache may still hold. */
export interface PendingDelete {
  namespace?: string;
  name: string;
  /** When known, only this incarnation counts (a re-created object has another uid). */
  uid?: string;
  /** When the delete was answered (ms, clock time). */
  atMs: number;
}

/** What a write's answer tells read-your-writes. */
export interface WriteEffect {
  resourceVersion?: bigint;
  deleted: Omit<PendingDelete, 'atMs'>[];
}

/** Pending deletes older than this are dropped (ms): far beyond any propagation delay. */
const PENDING_DELETE_MAX_AGE_MS = 60_000;
/** Bound on remembered pending deletes per resource (a huge deletecollection is not tracked past it). */
const PENDING_DELETE_MAX = 10_000;

export class WriteTracker {
  #max = new Map<string, bigint>();
  #deletes = new Map<string, PendingDelete[]>();

  /** Remembers that a write to `key` returned `rv` (keeps the maximum). */
  record(key: string, rv: bigint): void {
    const cur = this.#max.get(key);
    if (cur === undefined || rv > cur) this.#max.set(key, rv);
  }

  /** The RV a consistent read of `key` must see; 0 when nothing was written through the proxy. */
  required(key: string): bigint {
    return this.#max.get(key) ?? 0n;
  }

  /** Applies a write's {@link WriteEffect} at time `nowMs`. */
  apply(key: string, effect: WriteEffect, nowMs: number): void {
    if (effect.resourceVersion !== undefined) this.record(key, effect.resourceVersion);
    if (effect.deleted.length === 0) return;
    const list = this.pendingDeletes(key, nowMs);
    for (const d of effect.deleted) {
      if (list.length >= PENDING_DELETE_MAX) break;
      list.push({ ...d, atMs: nowMs });
    }
    this.#deletes.set(key, list);
  }

  /** Deletes of `key` the cache has not been seen to apply yet (expired ones dropped). */
  pendingDeletes(key: string, nowMs: number): PendingDelete[] {
    const list = (this.#deletes.get(key) ?? []).filter((d) => nowMs - d.atMs < PENDING_DELETE_MAX_AGE_MS);
    if (list.length === 0) this.#deletes.delete(key);
    else this.#deletes.set(key, list);
    return list;
  }

  /** Forgets pending deletes the cache has applied. */
  resolveDeletes(key: string, done: Set<PendingDelete>): void {
    const list = this.#deletes.get(key);
    if (!list) return;
    const rest = list.filter((d) => !done.has(d));
    if (rest.length === 0) this.#deletes.delete(key);
    else this.#deletes.set(key, rest);
  }
}

interface Meta {
  name?: unknown;
  namespace?: unknown;
  uid?: unknown;
  resourceVersion?: unknown;
}

function rvOf(m: Meta | undefined): bigint | undefined {
  const rv = m?.resourceVersion;
  return typeof rv === 'string' && /^[0-9]{1,20}$/.test(rv) ? BigInt(rv) : undefined;
}

function deletedOf(m: Meta | undefined, fallbackNamespace: string | undefined) {
  if (typeof m?.name !== 'string') return undefined;
  const d: Omit<PendingDelete, 'atMs'> = { name: m.name };
  const ns = typeof m.namespace === 'string' ? m.namespace : fallbackNamespace;
  if (ns !== undefined) d.namespace = ns;
  if (typeof m.uid === 'string') d.uid = m.uid;
  return d;
}

/**
 * Reads a successful write's JSON answer. `method`/`namespace` are the request's; for DELETE
 * answers a success Status names the deleted object, a list names every deleted item.
 * Non-JSON or unexpected bodies yield no effect.
 */
export function writeEffectOf(body: Buffer, method: string, namespace: string | undefined): WriteEffect {
  const effect: WriteEffect = { deleted: [] };
  let v: { kind?: unknown; status?: unknown; metadata?: Meta; details?: Meta; items?: { metadata?: Meta }[] };
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    return effect;
  }
  if (v === null || typeof v !== 'object') return effect;
  const rv = rvOf(v.metadata);
  if (rv !== undefined) effect.resourceVersion = rv;
  if (method !== 'DELETE') return effect;
  if (v.kind === 'Status') {
    const d = v.status === 'Success' ? deletedOf(v.details, namespace) : undefined;
    if (d) effect.deleted.push(d);
  } else if (Array.isArray(v.items)) {
    for (const it of v.items) {
      const d = deletedOf(it?.metadata, undefined);
      if (d) effect.deleted.push(d);
    }
  }
  // A single object answered by DELETE is still present (graceful deletion or finalizers):
  // its RV (the update that set deletionTimestamp) is what a consistent read must reach.
  return effect;
}
