/**
 * The keyed store of the watch cache with its secondary indexes: apiserver
 * `storage/cacher/store.go` (`storeElement`: key, object, labels, fields) and the
 * `threadSafeMap` indexers of client-go (`namespace`, and per-kind indexes such as pods by
 * `spec.nodeName`). Entries hold the upstream's verbatim bytes so answers never re-encode.
 */

import type { MetadataVersion } from '../apimachinery/accept.ts';
import type { FieldSelector } from '../apimachinery/field-selector.ts';
import { type FieldSet, indexedFields, selectableFields } from '../apimachinery/field-sets.ts';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { topLevelValueSpan } from '../apimachinery/json-span.ts';
import type { LabelSelector } from '../apimachinery/label-selector.ts';
import type { KubeObject, ObjectMeta, UpstreamObject } from '../apimachinery/object.ts';
import { eventChunks } from '../apimachinery/watch-event.ts';
import { ResourceVersionError } from '../util/errors.ts';
import { listItemBytes, listItemPrefix, typeMetaPrefix } from './encoding.ts';
import { ENTRY_OVERHEAD, parsedBytes } from './memory-size.ts';
import { GET_END, metadataHead, metadataSpan, OBJECT_END } from './metadata-view.ts';
import { type Slab, SlabArena } from './slab.ts';

/**
 * What the entries of one store share: the resource, the TypeMeta prefix removed from built-in
 * objects' bytes, the slabs their bytes live in, and the label sets seen last (entries with equal
 * labels share one frozen object: siblings — a ReplicaSet's pods, a seeded batch — arrive next
 * to each other in key order).
 */
export class EntryContext {
  readonly resource: ResourceInfo;
  /** `{"kind":K,"apiVersion":V,` of a built-in kind (the bytes stripped from its objects). */
  readonly prefix: Buffer | undefined;
  readonly arena = new SlabArena();
  readonly #recentLabels: Array<Readonly<Record<string, string>>> = [];
  #nextLabel = 0;

  constructor(resource: ResourceInfo) {
    this.resource = resource;
    this.prefix = resource.builtIn ? typeMetaPrefix(resource) : undefined;
  }

  /** `labels` with its values interned, as one frozen object shared with recent equal sets. */
  labels(labels: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
    for (const l of this.#recentLabels) if (sameLabels(l, labels)) return l;
    const out = Object.freeze(internValues(labels));
    this.#recentLabels[this.#nextLabel] = out;
    this.#nextLabel = (this.#nextLabel + 1) % RECENT_LABEL_SETS;
    return out;
  }
}

/** How many recent label sets an {@link EntryContext} compares a new object's labels with. */
const RECENT_LABEL_SETS = 8;

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  let n = 0;
  for (const k in b) {
    if (a[k] !== b[k] || !Object.hasOwn(a, k)) return false;
    n++;
  }
  for (const _ in a) n--;
  return n === 0;
}

/** {@link StoreEntry} `#meta` bits: the stored bytes are the stripped LIST item. */
const STRIPPED = 1;
/** …the entry was released (its slab bytes counted as free). */
const RELEASED = 2;
/** …the metadata span is known: start × {@link META_START}, end × {@link META_END}. */
const META_KNOWN = 4;
const META_START = 8;
const META_END = 2048;
/** Spans past these are not kept (found again on each use; not seen: metadata comes first). */
const META_START_LIMIT = 256;
const META_END_LIMIT = 1 << 20;

/**
 * One stored object (issue 12). Its bytes live in a slab shared by the store's entries
 * (`slab.ts`: an offset and a length, not a Buffer each — a Buffer of its own cost ~490 bytes
 * besides its contents). For a built-in kind whose upstream bytes start with
 * `{"kind":K,"apiVersion":V,` (what the apiserver writes) the stored bytes are the object as a
 * LIST item, `{` + the rest, and the TypeMeta prefix is shared per resource; a GET answer and a
 * watch event are written from that prefix plus a view of the stored bytes, a LIST writes views
 * of the stored bytes (no copy per item, none built on first use). Custom resources keep their
 * bytes whole (their list items carry kind and apiVersion). What the cache reads of the parsed
 * object is kept as fields (name, namespace, RV, labels — shared with equal recent sets — and the
 * selectable fields when the kind has more than name and namespace); the uid is read from the
 * bytes when asked. Immutable once created, except that the store may move its bytes to another
 * slab (compaction: same bytes, views already handed out stay valid). Satisfies
 * {@link UpstreamObject} for the reflector's `compact` (its `raw` then is a copy: the hot paths
 * use {@link wire} and {@link listItem}).
 */
export class StoreEntry implements UpstreamObject {
  /** "" for cluster-scoped objects. */
  readonly namespace: string;
  readonly name: string;
  readonly rv: bigint;
  readonly labels: Readonly<Record<string, string>> | undefined;
  /** The selectable fields, or undefined when they are only `metadata.name` / `metadata.namespace`. */
  readonly #fields: FieldSet | undefined;
  readonly #ctx: EntryContext;
  /** Where the stored bytes are: `#slab.buf[#offset, #offset + #length)`. */
  #slab: Slab;
  #offset: number;
  readonly #length: number;
  /** {@link STRIPPED}, {@link RELEASED} and the `metadata` span once found (see META_*). */
  #meta: number;

  constructor(ctx: EntryContext, obj: UpstreamObject) {
    const meta = obj.object.metadata;
    const resource = ctx.resource;
    this.#ctx = ctx;
    this.namespace = intern(meta.namespace ?? '');
    this.name = meta.name;
    this.rv = parseRV(meta.resourceVersion);
    // The bytes once, and of the parsed object only what the cache reads (issue 12: the whole
    // parsed object cost ~2.5× its JSON bytes in V8's heap, kept for every entry).
    const raw = obj.raw;
    const prefix = listItemPrefix(resource, raw);
    if (prefix) {
      this.#slab = ctx.arena.copy(raw, prefix.length, raw.length, 1);
      this.#length = raw.length - prefix.length + 1;
      this.#offset = this.#slab.used - this.#length;
      this.#slab.buf[this.#offset] = 0x7b; // '{'
      this.#meta = STRIPPED;
    } else {
      this.#slab = ctx.arena.copy(raw, 0, raw.length);
      this.#length = raw.length;
      this.#offset = this.#slab.used - this.#length;
      this.#meta = 0;
    }
    this.labels = meta.labels === undefined ? undefined : ctx.labels(meta.labels);
    const fields = selectableFields(resource, obj.object);
    this.#fields = onlyNameFields(fields) ? undefined : internFields(fields, this.name, this.namespace);
  }

  /**
   * `namespace/name`, or `name` for cluster-scoped objects: built on each call (issue 12: not
   * kept per entry; hot paths compare entries with {@link compareEntryKeys} instead).
   */
  get key(): string {
    return objectKey(this.namespace, this.name);
  }

  /** `metadata.uid`, read from the stored bytes (pending deletes compare it: `server/serve-cache.ts`). */
  get uid(): string | undefined {
    const m = this.metadata;
    const span = topLevelValueSpan(m, 'uid');
    if (!span) return undefined;
    const v: unknown = JSON.parse(m.toString('utf8', span[0], span[1]));
    return typeof v === 'string' ? v : undefined;
  }

  /** The selectable fields (`fields.Set`): built on each call when they are name and namespace only. */
  get fields(): FieldSet {
    if (this.#fields) return this.#fields;
    const f: Record<string, string> = { 'metadata.name': this.name };
    if (this.#ctx.resource.namespaced) f['metadata.namespace'] = this.namespace;
    return f;
  }

  /**
   * What the cache keeps of the object's metadata (name, namespace, RV, uid, labels), built on
   * each call: kept as the entry's own fields, not as parsed objects (~130 bytes an entry less).
   */
  get object(): KubeObject {
    const m: ObjectMeta = { name: this.name, resourceVersion: String(this.rv) };
    if (this.namespace !== '') m.namespace = this.namespace;
    const uid = this.uid;
    if (uid !== undefined) m.uid = uid;
    if (this.labels !== undefined) m.labels = this.labels as Record<string, string>;
    return { metadata: m };
  }

  /** The stored bytes (a view): the LIST item when stripped, else the upstream's bytes. */
  get #bytes(): Buffer {
    return this.#slab.buf.subarray(this.#offset, this.#offset + this.#length);
  }

  /** The object as the upstream sent it (WITH kind/apiVersion); a copy. */
  get raw(): Buffer {
    return Buffer.concat(this.wire);
  }

  /** This entry as an {@link UpstreamObject} (itself). */
  get obj(): UpstreamObject {
    return this;
  }

  /**
   * The object's bytes as a GET answer and watch event object (WITH kind/apiVersion, byte for
   * byte what the upstream sent), as chunks to write in order: the shared prefix and a view of
   * the stored bytes past their `{`.
   */
  get wire(): readonly Buffer[] {
    if (!(this.#meta & STRIPPED)) return [this.#bytes];
    return [this.#ctx.prefix!, this.#slab.buf.subarray(this.#offset + 1, this.#offset + this.#length)];
  }

  /**
   * Bytes as an item of a LIST answer (see `listItemBytes`): a view of the stored bytes (for a
   * built-in object whose bytes did not start with the TypeMeta prefix, not seen with real
   * apiservers, re-encoded on each call and not kept).
   */
  get listItem(): Buffer {
    if (this.#meta & STRIPPED || !this.#ctx.resource.builtIn) return this.#bytes;
    return listItemBytes(this.#ctx.resource, this.#bytes);
  }

  /**
   * The object as an ADDED watch event line, for initial snapshots: chunks around a view of the
   * stored bytes, nothing encoded or kept (issue 12: a kept copy per entry, built once any watch
   * asked for initial events, doubled the store; issue 11 item 15: nor is anything re-encoded
   * per watcher).
   */
  get addedLine(): readonly Buffer[] {
    const w = this.wire;
    return w.length === 2 ? eventChunks('ADDED', w[0], w[1]!) : eventChunks('ADDED', undefined, w[0]!);
  }

  /**
   * The object's top-level `metadata` value: a view of the stored bytes (its span found by a
   * JSON scan on first use and kept packed in one number; `{}` when absent).
   */
  get metadata(): Buffer {
    let start: number;
    let end: number;
    const m = this.#meta;
    if (m & META_KNOWN) {
      start = Math.floor(m / META_START) % (META_END / META_START);
      end = Math.floor(m / META_END);
    } else {
      [start, end] = metadataSpan(this.#bytes);
      if (start < META_START_LIMIT && end < META_END_LIMIT)
        this.#meta = (m % META_KNOWN) + META_KNOWN + start * META_START + end * META_END;
    }
    return end > start
      ? this.#slab.buf.subarray(this.#offset + start, this.#offset + end)
      : Buffer.from('{}');
  }

  /** The object as a PartialObjectMetadata GET answer (`meta.k8s.io/<version>`), as chunks. */
  metadataWire(version: MetadataVersion): readonly Buffer[] {
    return [metadataHead(version), this.metadata, GET_END];
  }

  /** The object as the ADDED line of a metadata watch's initial events, chunks around a view. */
  metadataAddedLine(version: MetadataVersion): readonly Buffer[] {
    const [prefix, metadata, end] = eventChunks('ADDED', metadataHead(version), this.metadata);
    return [prefix!, metadata!, OBJECT_END, end!];
  }

  /**
   * Bytes this entry holds (see `memory-size.ts`): the stored bytes, the strings, labels and
   * fields kept, and its bookkeeping (labels are counted whole even when shared).
   */
  get size(): number {
    return (
      ENTRY_OVERHEAD +
      this.#length +
      parsedBytes(this.name) +
      (this.labels ? parsedBytes(this.labels) : 0) +
      (this.#fields ? fieldBytes(this.#fields) : 0)
    );
  }

  /**
   * Marks the stored bytes free (nobody stores this entry any more: replaced or removed and then
   * evicted from the history, or dropped by a relist). Idempotent. The bytes stay readable for
   * whoever still holds the entry (no slab space is ever reused).
   */
  release(): void {
    if (this.#meta & RELEASED) return;
    this.#meta += RELEASED;
    this.#ctx.arena.release(this.#slab, this.#length);
  }

  /** Moves the stored bytes to the arena's current slab when theirs is sparse (compaction). */
  compact(): void {
    const arena = this.#ctx.arena;
    const old = this.#slab;
    if (this.#meta & RELEASED || !old.sparse || old === arena.current) return;
    const slab = arena.copy(old.buf, this.#offset, this.#offset + this.#length);
    arena.release(old, this.#length);
    this.#slab = slab;
    this.#offset = slab.used - this.#length;
  }

  matches(label: LabelSelector, field: FieldSelector): boolean {
    return label.matches(this.labels) && (field.empty || field.matches(this.fields));
  }
}

/** Whether a field set is just `metadata.name` (and `metadata.namespace`): rebuilt when read. */
function onlyNameFields(f: FieldSet): boolean {
  for (const k in f) if (k !== 'metadata.name' && k !== 'metadata.namespace') return false;
  return true;
}

/**
 * The one instance of `s` in V8's string table: a property key is always internalized, and
 * `Object.keys` hands that instance back. The table is weak (a string nobody holds is collected),
 * so this deduplicates the values many entries share (namespaces, node names, phases, label
 * values) without a table of our own that would only grow. Index-like keys ("123") come back as
 * new strings: correct, just not shared.
 */
function intern(s: string): string {
  if (s.length === 0) return '';
  return Object.keys({ [s]: 0 })[0] ?? s;
}

/** `labels` with every value {@link intern}ed (keys already are: JSON.parse internalizes them). */
function internValues(labels: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const k in labels) out[k] = intern(labels[k]!);
  return out;
}

/** `f` with its values shared: the entry's own name and namespace, the rest {@link intern}ed. */
function internFields(f: FieldSet, name: string, namespace: string): FieldSet {
  const out: Record<string, string> = {};
  for (const k in f) {
    const v = f[k]!;
    out[k] = k === 'metadata.name' ? name : k === 'metadata.namespace' ? namespace : intern(v);
  }
  return out;
}

/** Estimated heap bytes of a {@link FieldSet} (its values; keys are shared constants). */
function fieldBytes(f: FieldSet): number {
  let n = 24;
  for (const k in f) n += 8 + parsedBytes(f[k]);
  return n;
}

/** The store key of an object. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * A resourceVersion as an unsigned 64-bit integer.
 * @throws ResourceVersionError `KCP_ERR_RESOURCE_VERSION_NOT_UINT64` when it is not a decimal uint64 (such resources cannot be cached).
 */
export function parseRV(rv: string): bigint {
  if (!/^\d{1,20}$/.test(rv))
    throw new ResourceVersionError(
      'KCP_ERR_RESOURCE_VERSION_NOT_UINT64',
      `resourceVersion ${JSON.stringify(rv)} is not a uint64`,
    );
  const n = BigInt(rv);
  if (n > 0xffff_ffff_ffff_ffffn)
    throw new ResourceVersionError(
      'KCP_ERR_RESOURCE_VERSION_NOT_UINT64',
      `resourceVersion ${JSON.stringify(rv)} is not a uint64`,
    );
  return n;
}

type Bucket = Map<string, StoreEntry>;

/**
 * `namespace → name → entry` plus indexes. Invariant: every entry is in exactly one namespace
 * bucket (keyed by name; cluster-scoped objects in the `""` bucket) and in one bucket per indexed
 * field (keyed by `key`); buckets are deleted when they become empty. There is no separate
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
  #byField = new Map<string, Map<string, Bucket>>();
  #size = 0;
  #bytes = 0;
  /** All entries in key order, rebuilt lazily after a key is added or removed; updated in place on updates. */
  #sorted: StoreEntry[] | undefined;

  constructor(resource: ResourceInfo, ctx = new EntryContext(resource)) {
    this.#resource = resource;
    this.#ctx = ctx;
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
  get arena(): SlabArena {
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
      if (this.#sorted) this.#sorted[sortedIndex(this.#sorted, prev)] = e;
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
    if (this.#indexed.length > 0) {
      const key = e.key;
      for (const f of this.#indexed) addTo(this.#byField.get(f)!, e.fields[f] ?? '', key, e);
    }
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
   * Replaces the whole contents with `entries` (built beforehand with {@link entry}, so nothing
   * here can throw half-way): the new maps are filled aside and swapped in at the end. The
   * entries replaced are released (nothing else holds them: the history is reset with a relist).
   */
  replaceAll(entries: readonly StoreEntry[]): void {
    const next = new Store(this.#resource, this.#ctx);
    for (const e of entries) next.#add(e);
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
    if (this.#indexed.length > 0) {
      const key = e.key;
      for (const f of this.#indexed) removeFrom(this.#byField.get(f)!, e.fields[f] ?? '', key);
    }
  }

  /**
   * Moves the bytes of entries in sparse slabs (less than half live) to the current slab once
   * enough is wasted ({@link SlabArena.shouldCompact}): one pass over the store, amortized over
   * the changes that wasted the space. Entries only the history holds stay where they are until
   * it evicts them.
   */
  #maybeCompact(): void {
    const arena = this.#ctx.arena;
    if (!arena.shouldCompact()) return;
    for (const e of this.values()) e.compact();
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
    let best: Bucket | undefined =
      namespace !== undefined ? (this.#byNamespace.get(namespace) ?? EMPTY) : undefined;
    for (const f of this.#indexed) {
      const v = field.exact(f);
      if (v === undefined) continue;
      const bucket = this.#byField.get(f)!.get(v) ?? EMPTY;
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

function addTo(index: Map<string, Bucket>, value: string, key: string, e: StoreEntry): void {
  let b = index.get(value);
  if (!b) {
    b = new Map();
    index.set(value, b);
  }
  b.set(key, e);
}

function removeFrom(index: Map<string, Bucket>, value: string, key: string): void {
  const b = index.get(value);
  if (!b) return;
  b.delete(key);
  if (b.size === 0) index.delete(value);
}
