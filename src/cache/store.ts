/**
 * The keyed store of the watch cache with its secondary indexes: apiserver
 * `storage/cacher/store.go` (`storeElement`: key, object, labels, fields) and the
 * `threadSafeMap` indexers of client-go (`namespace`, and per-kind indexes such as pods by
 * `spec.nodeName`). Entries hold the upstream's verbatim bytes so answers never re-encode.
 */

import type { FieldSelector } from '../apimachinery/field-selector.ts';
import { indexedFields } from '../apimachinery/field-sets.ts';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import type { UpstreamObject } from '../apimachinery/object.ts';
import { EntryContext } from './entry-context.ts';
import type { SlabArena } from './slab.ts';
import { StoreEntry } from './store-entry.ts';

export { EntryContext } from './entry-context.ts';
export { objectKey, parseRV, StoreEntry } from './store-entry.ts';

type Bucket = Map<string, StoreEntry>;
/** The entries of one value of an indexed field (a Set of entries: no key string per entry). */
type FieldBucket = Set<StoreEntry>;

/**
 * `namespace → name → entry` plus indexes. Invariant: every entry is in exactly one namespace
 * bucket (keyed by name; cluster-scoped objects in the `""` bucket) and in one bucket per indexed
 * field (a set of entries: a replaced entry leaves it before its successor joins); buckets are
 * deleted when they become empty. There is no separate
 * `key → entry` map (issue 12: one Map slot and one key string per entry less). The entries'
 * bytes live in the slabs of {@link EntryContext.arena}; an entry leaving the store passes to the
 * history (as an event's replaced or deleted object), which releases it on eviction
 * ({@link StoreEntry.release}); after changes, sparse slabs are compacted.
 */
export class Store {
  readonly #resource: ResourceInfo;
  readonly #ctx: EntryContext;
  readonly #indexed: readonly string[];
  #byNamespace = new Map<string, Bucket>();
  #byField = new Map<string, Map<string, FieldBucket>>();
  #size = 0;
  #bytes = 0;
  /** All entries in key order, rebuilt lazily after a key is added or removed; updated in place on updates. */
  #sorted: StoreEntry[] | undefined;
  /** The entries out of the store whose bytes are still in its slabs (the history's), to compact too. */
  readonly #held: (() => Iterable<StoreEntry>) | undefined;

  /**
   * `ctx`: what the entries share (a new one by default). `held`: the entries that left the
   * store but are still held (by the history), moved by compaction as well.
   */
  constructor(resource: ResourceInfo, ctx = new EntryContext(resource), held?: () => Iterable<StoreEntry>) {
    this.#resource = resource;
    this.#ctx = ctx;
    this.#held = held;
    this.#indexed = indexedFields(resource);
    for (const f of this.#indexed) this.#byField.set(f, new Map());
  }

  get size(): number {
    return this.#size;
  }

  /** Bytes the entries hold (sum of {@link StoreEntry.size}). */
  get bytes(): number {
    return this.#bytes;
  }

  /** The slabs of this store's entries (their counters, for tests and statistics). */
  get arena(): SlabArena<EntryContext> {
    return this.#ctx.arena;
  }

  /** Builds an entry for `obj` (parses its RV, labels and fields; copies its bytes into a slab). */
  entry(obj: UpstreamObject): StoreEntry {
    return new StoreEntry(this.#ctx, obj);
  }

  /** The entry of `key` (`namespace/name`, or `name` for cluster-scoped objects). */
  get(key: string): StoreEntry | undefined {
    const slash = this.#resource.namespaced ? key.indexOf('/') : -1;
    return slash < 0 ? this.lookup('', key) : this.lookup(key.slice(0, slash), key.slice(slash + 1));
  }

  /** The entry of `name` in `namespace` ("" for cluster-scoped objects). */
  lookup(namespace: string, name: string): StoreEntry | undefined {
    return this.#byNamespace.get(namespace)?.get(name);
  }

  /** Inserts or replaces; returns the previous entry (now the caller's to release). */
  put(e: StoreEntry): StoreEntry | undefined {
    const prev = this.lookup(e.namespace, e.name);
    if (prev) {
      this.#unindex(prev);
      if (this.#sorted) {
        const i = sortedIndex(this.#sorted, prev);
        if (this.#sorted[i] === prev) this.#sorted[i] = e;
        else this.#sorted = undefined;
      }
    } else this.#sorted = undefined;
    this.#add(e);
    this.#maybeCompact();
    return prev;
  }

  #add(e: StoreEntry): void {
    let b = this.#byNamespace.get(e.namespace);
    if (!b) {
      b = new Map();
      this.#byNamespace.set(e.namespace, b);
    }
    b.set(e.name, e);
    this.#size++;
    this.#bytes += e.size;
    for (const f of this.#indexed) addTo(this.#byField.get(f)!, e.field(f), e);
  }

  /** Removes `key`; returns the removed entry (now the caller's to release). */
  remove(key: string): StoreEntry | undefined {
    const prev = this.get(key);
    if (prev) {
      this.#unindex(prev);
      this.#sorted = undefined;
    }
    this.#maybeCompact();
    return prev;
  }

  /**
   * Whether `entries` are exactly the stored objects: the same keys, each at the same
   * resourceVersion (a snapshot that proves no object changed since the stored one). O(n).
   */
  holdsExactly(entries: readonly StoreEntry[]): boolean {
    if (entries.length !== this.#size) return false;
    const keys = new Set<string>();
    for (const e of entries) {
      if (this.get(e.key)?.rv !== e.rv) return false;
      keys.add(e.key);
    }
    return keys.size === this.#size;
  }

  /**
   * Replaces the whole contents with `entries` (built beforehand with {@link entry}, so nothing
   * here can throw half-way): the new maps are filled aside and swapped in at the end. A key
   * that repeats keeps its later entry. The entries replaced are released (nothing else holds
   * them: the history is reset with a relist).
   */
  replaceAll(entries: readonly StoreEntry[]): void {
    const next = new Store(this.#resource, this.#ctx);
    for (const e of entries) {
      const prev = next.lookup(e.namespace, e.name);
      if (prev) next.#unindex(prev);
      next.#add(e);
      if (prev && prev !== e) prev.release();
    }
    for (const e of this.values()) if (next.lookup(e.namespace, e.name) !== e) e.release();
    this.#byNamespace = next.#byNamespace;
    this.#byField = next.#byField;
    this.#size = next.#size;
    this.#bytes = next.#bytes;
    this.#sorted = undefined;
    this.#maybeCompact();
  }

  /** Takes `e` out of every map (a replacing entry is added back by the caller). */
  #unindex(e: StoreEntry): void {
    this.#bytes -= e.size;
    this.#size--;
    const b = this.#byNamespace.get(e.namespace);
    if (b) {
      b.delete(e.name);
      if (b.size === 0) this.#byNamespace.delete(e.namespace);
    }
    for (const f of this.#indexed) removeFrom(this.#byField.get(f)!, e.field(f), e);
  }

  /**
   * Moves the bytes of entries in sparse slabs (less than half live) to the current slab once
   * enough is wasted ({@link SlabArena.shouldCompact}): one pass over the store and the held
   * entries, amortized over the changes that wasted the space.
   */
  #maybeCompact(): void {
    const arena = this.#ctx.arena;
    if (!arena.shouldCompact()) return;
    for (const e of this.values()) e.compactBytes();
    if (this.#held) for (const e of this.#held()) e.compactBytes();
    arena.compacted();
  }

  /**
   * The smallest candidate set that can hold every match of (namespace, field selector): one
   * entry for an exact `metadata.name`, an index bucket for an `=` term on an indexed field, the
   * namespace bucket, or everything — the latter already in key order (`sorted`), so the
   * frequent cluster-wide LIST / initial watch does not sort the whole store each time.
   * Callers still filter every candidate.
   */
  candidates(
    namespace: string | undefined,
    field: FieldSelector,
  ): { entries: Iterable<StoreEntry>; sorted: boolean } {
    if (namespace === undefined && this.#resource.namespaced) namespace = field.exact('metadata.namespace');
    const name = field.exact('metadata.name');
    if (name !== undefined && (namespace !== undefined || !this.#resource.namespaced)) {
      const e = this.lookup(namespace ?? '', name);
      return { entries: e ? [e] : [], sorted: true };
    }
    let best: { readonly size: number; values(): Iterable<StoreEntry> } | undefined =
      namespace !== undefined ? (this.#byNamespace.get(namespace) ?? EMPTY) : undefined;
    for (const f of this.#indexed) {
      const v = field.exact(f);
      if (v === undefined) continue;
      const bucket = this.#byField.get(f)!.get(v) ?? EMPTY_FIELD;
      if (!best || bucket.size < best.size) best = bucket;
    }
    if (best) return { entries: best.values(), sorted: false };
    if (!this.#sorted) this.#sorted = [...this.values()].sort(compareEntryKeys);
    return { entries: this.#sorted, sorted: true };
  }

  /** All entries (unordered). */
  *values(): Generator<StoreEntry> {
    for (const b of this.#byNamespace.values()) yield* b.values();
  }
}

const EMPTY: Bucket = new Map();
const EMPTY_FIELD: FieldBucket = new Set();

/** Index of `e` in `sorted` (present, in key order: binary search). */
function sortedIndex(sorted: readonly StoreEntry[], e: StoreEntry): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareEntryKeys(sorted[mid]!, e) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * {@link compareKeys} of two entries' keys without building them: `namespace/name` compared as
 * one string (a namespace that is a prefix of the other compares its `/` with the other's next
 * character; namespaces and names hold no `/`).
 */
export function compareEntryKeys(a: StoreEntry, b: StoreEntry): number {
  if (a.namespace === b.namespace) return compareKeys(a.name, b.name);
  const x = a.namespace;
  const y = b.namespace;
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const d = x.charCodeAt(i) - y.charCodeAt(i);
    if (d !== 0) return d;
  }
  return x.length < y.length ? SLASH - y.charCodeAt(n) : x.charCodeAt(n) - SLASH;
}

const SLASH = 0x2f;

/** Key order of etcd and the apiserver's btree (byte order; keys are ASCII). */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function addTo(index: Map<string, FieldBucket>, value: string, e: StoreEntry): void {
  let b = index.get(value);
  if (!b) {
    b = new Set();
    index.set(value, b);
  }
  b.add(e);
}

function removeFrom(index: Map<string, FieldBucket>, value: string, e: StoreEntry): void {
  const b = index.get(value);
  if (!b) return;
  b.delete(e);
  if (b.size === 0) index.delete(value);
}
