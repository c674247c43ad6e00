/**
 * Read-your-writes and "never back in time" bookkeeping (docs/design.md §3, the RV="" row). For
 * each cached resource:
 * - the highest resourceVersion returned by a write this proxy passed upstream;
 * - the highest resourceVersion of any other answer it passed upstream (LIST/GET answers: what
 *   clients were shown; after a stream outage the cache may be older than that);
 * - deletions whose answer carries no usable RV: an immediate DELETE answers a Status
 *   (`details.name/uid`, no RV) and a deletecollection answers the deleted items at their
 *   pre-delete RVs. For those the cache is fresh once the object is gone from it;
 * - a deletecollection's list RV is the RV of the LIST the apiserver ran before deleting
 *   (`registry/generic/registry/store.go` `DeleteCollection` answers that list, items as listed),
 *   etcd's global revision, not a write of the resource: with items, their deletions come after
 *   it (the cache must see them gone); without items nothing was written, and the RV is only
 *   what the client was shown (a cache of a resource with no later event never reaches it);
 * - "blind" answers whose RV could not be learnt (CBOR, an unknown encoding, a Status without details): until an
 *   answer to a request that started after them tells an RV, consistent reads go upstream.
 * A "consistent" read is served from the cache only once all hold, so a client that writes or
 * reads through the proxy and reads right after never sees an older state.
 */

import type { MetaFields } from '../../apimachinery/protobuf-meta.ts';
import type { AnswerMeta } from './answer-meta.ts';

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
  /** The RV the write returned: a consistent read waits (bounded) until the cache reaches it. */
  resourceVersion?: bigint;
  /**
   * The RV of a read the answer showed, not of a write (an empty deletecollection's list): a
   * consistent read is served from the cache only once it reached it, else passed upstream at
   * once (`behind-upstream`), as after a LIST passed upstream.
   */
  shownRV?: bigint;
  deleted: Omit<PendingDelete, 'atMs'>[];
  /** False when the answer could not be read (encoding): neither RV nor deletions are known. */
  learnt: boolean;
}

/** Pending deletes older than this are dropped (ms): far beyond any propagation delay. */
const PENDING_DELETE_MAX_AGE_MS = 60_000;
/** Bound on remembered pending deletes per resource (a huge deletecollection is not tracked past it). */
const PENDING_DELETE_MAX = 10_000;

function raise(m: Map<string, bigint>, key: string, rv: bigint): void {
  const cur = m.get(key);
  if (cur === undefined || rv > cur) m.set(key, rv);
}

/**
 * How long a forwarded answer's RV counts as just shown (ms): the apiserver keeps at least this
 * much of each resource's history (its cacher's `eventFreshDuration`, 75 s), so a watch from
 * that RV is one it still streams.
 */
export const RECENTLY_SHOWN_MS = 75_000;
/** Bound on the resources {@link WriteTracker.shownRecently} remembers at once. */
export const RECENTLY_SHOWN_KEYS = 1024;

export class WriteTracker {
  #max = new Map<string, bigint>();
  #shown = new Map<string, bigint>();
  /** Per key: the lowest RV a forwarded read showed within {@link RECENTLY_SHOWN_MS}, and when. */
  #recentLowest = new Map<string, { rv: bigint; atMs: number }>();
  /** Per key: when the oldest unresolved blind answer was given (ms). */
  #blind = new Map<string, number>();
  #deletes = new Map<string, PendingDelete[]>();

  /**
   * Remembers that a write to `key` returned `rv` (keeps the maximum). `startedMs`: when its
   * request started; it resolves the blind answers given before (its RV is newer than theirs).
   */
  record(key: string, rv: bigint, startedMs?: number): void {
    raise(this.#max, key, rv);
    if (startedMs !== undefined) this.#resolveBlind(key, startedMs);
  }

  /**
   * Remembers that an answer passed upstream (a LIST/GET; not a write) showed a client `rv`,
   * for a request started at `startedMs`. The cache must reach it before answering RV="".
   */
  shown(key: string, rv: bigint, startedMs: number): void {
    raise(this.#shown, key, rv);
    this.shownUpstream(key, rv, startedMs);
    this.#resolveBlind(key, startedMs);
  }

  /**
   * Remembers only for {@link shownRecently} that an answer passed upstream showed a client `rv`:
   * for reads of a resource no cache tracks yet (the LIST that starts an on-demand cache). At
   * most {@link RECENTLY_SHOWN_KEYS} resources are remembered (the keys are resources the
   * apiserver answered 200 for; a full map drops expired entries first, else ignores new keys).
   */
  shownUpstream(key: string, rv: bigint, startedMs: number): void {
    const low = this.#recentLowest.get(key);
    if (low === undefined && this.#recentLowest.size >= RECENTLY_SHOWN_KEYS) {
      for (const [k, v] of this.#recentLowest)
        if (startedMs - v.atMs > RECENTLY_SHOWN_MS) this.#recentLowest.delete(k);
      if (this.#recentLowest.size >= RECENTLY_SHOWN_KEYS) return;
    }
    if (low === undefined || startedMs - low.atMs > RECENTLY_SHOWN_MS || rv <= low.rv)
      this.#recentLowest.set(key, { rv, atMs: startedMs });
  }

  /**
   * Whether an answer passed upstream (a LIST/GET) showed a client of `key` an RV at or below
   * `rv` within {@link RECENTLY_SHOWN_MS} before `nowMs`: such an RV came through this proxy
   * moments ago (the LIST that started an on-demand cache is answered upstream, below the
   * cache's first snapshot), and the apiserver still streams a watch from it. Approximate by
   * design: one remembered RV per key, the lowest since the previous one expired.
   */
  shownRecently(key: string, rv: bigint, nowMs: number): boolean {
    const low = this.#recentLowest.get(key);
    return low !== undefined && nowMs - low.atMs <= RECENTLY_SHOWN_MS && low.rv <= rv;
  }

  /** An answer at `atMs` whose RV could not be learnt. */
  blind(key: string, atMs: number): void {
    const cur = this.#blind.get(key);
    if (cur === undefined || atMs < cur) this.#blind.set(key, atMs);
  }

  /** Whether an answer of `key` with an unknown RV awaits an answer that tells a newer one. */
  isBlind(key: string): boolean {
    return this.#blind.has(key);
  }

  #resolveBlind(key: string, startedMs: number): void {
    const at = this.#blind.get(key);
    // Started after the blind answer was given: its RV is at least the blind one's (etcd is
    // linearizable). The same millisecond is not "after".
    if (at !== undefined && startedMs > at) this.#blind.delete(key);
  }

  /** The RV a consistent read of `key` must see; 0 when nothing was written through the proxy. */
  required(key: string): bigint {
    return this.#max.get(key) ?? 0n;
  }

  /** The highest RV a non-write answer passed upstream showed for `key`; 0 when none. */
  shownRV(key: string): bigint {
    return this.#shown.get(key) ?? 0n;
  }

  /**
   * Applies a write's {@link WriteEffect}, answered at `nowMs` to a request started at
   * `startedMs` (default `nowMs`). An effect not learnt makes `key` blind.
   */
  apply(key: string, effect: WriteEffect, nowMs: number, startedMs = nowMs): void {
    if (!effect.learnt) {
      this.blind(key, nowMs);
      return;
    }
    if (effect.resourceVersion !== undefined) this.record(key, effect.resourceVersion, startedMs);
    if (effect.shownRV !== undefined) this.shown(key, effect.shownRV, startedMs);
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

function rvOf(m: MetaFields | undefined): bigint | undefined {
  const rv = m?.resourceVersion;
  return typeof rv === 'string' && /^[0-9]{1,20}$/.test(rv) ? BigInt(rv) : undefined;
}

/** The top-level resourceVersion an answer carries (an object's, a list's), if any. */
export function answerRV(meta: AnswerMeta | undefined): bigint | undefined {
  return rvOf(meta?.metadata);
}

function deletedOf(m: MetaFields | undefined, fallbackNamespace: string | undefined) {
  if (typeof m?.name !== 'string') return undefined;
  const d: Omit<PendingDelete, 'atMs'> = { name: m.name };
  const ns = typeof m.namespace === 'string' ? m.namespace : fallbackNamespace;
  if (ns !== undefined) d.namespace = ns;
  if (typeof m.uid === 'string') d.uid = m.uid;
  return d;
}

/**
 * Reads a successful write's answer (decoded by `answer-meta.ts`; undefined = could not be
 * read). `method`/`namespace` are the request's; for DELETE answers a success Status names the
 * deleted object, a list names every deleted item. An answer that yields neither an RV nor a
 * deletion is not learnt (never "assume seen").
 */
export function writeEffectOf(
  meta: AnswerMeta | undefined,
  method: string,
  namespace: string | undefined,
): WriteEffect {
  const effect: WriteEffect = { deleted: [], learnt: false };
  if (meta === undefined || meta === null || typeof meta !== 'object') return effect;
  const rv = rvOf(meta.metadata);
  // An empty deletecollection wrote nothing: its RV is its LIST's (see the file comment).
  // Waiting for the cache to reach it stalled a consistent read 3 s whenever the resource had
  // no later event (the namespace controller's check after each deletecollection).
  const emptyDeleteCollection = method === 'DELETE' && Array.isArray(meta.items) && meta.items.length === 0;
  if (rv !== undefined && emptyDeleteCollection) effect.shownRV = rv;
  else if (rv !== undefined) effect.resourceVersion = rv;
  if (method === 'DELETE') {
    if (meta.kind === 'Status') {
      const d = meta.status === 'Success' ? deletedOf(meta.details, namespace) : undefined;
      if (d) effect.deleted.push(d);
    } else if (Array.isArray(meta.items)) {
      for (const it of meta.items) {
        const d = deletedOf(it?.metadata, undefined);
        if (d) effect.deleted.push(d);
      }
    }
  }
  // A single object answered by DELETE is still present (graceful deletion or finalizers):
  // its RV (the update that set deletionTimestamp) is what a consistent read must reach.
  effect.learnt =
    effect.resourceVersion !== undefined || effect.shownRV !== undefined || effect.deleted.length > 0;
  return effect;
}
