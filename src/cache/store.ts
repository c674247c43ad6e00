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
import type { LabelSelector } from '../apimachinery/label-selector.ts';
import type { KubeObject, ObjectMeta, UpstreamObject } from '../apimachinery/object.ts';
import { eventChunks } from '../apimachinery/watch-event.ts';
import { ResourceVersionError } from '../util/errors.ts';
import { listItemBytes, listItemPrefix } from './encoding.ts';
import { bufferBytes, ENTRY_OVERHEAD, type Meter, ownedBytes, parsedBytes } from './memory-size.ts';
import { GET_END, metadataHead, metadataSpan, OBJECT_END } from './metadata-view.ts';

/**
 * One stored object, kept as ONE Buffer (issue 12): for a built-in kind whose upstream bytes
 * start with `{"kind":K,"apiVersion":V,` (what the apiserver writes) the stored bytes are the
 * object as a LIST item, `{` + the rest, and the TypeMeta prefix is shared per resource; a GET
 * answer and a watch event are written from that prefix plus a view of the stored bytes, a LIST
 * writes the stored bytes themselves (no copy per item, none built on first use). Custom
 * resources keep their bytes whole (their list items carry kind and apiVersion). Immutable once
 * created except for the lazily built ADDED line (shared by every reader), whose bytes are
 * reported to the {@link Meter} of whoever holds the entry then (the store, or the history once
 * replaced). Satisfies {@link UpstreamObject} for the reflector's `compact` (its `raw` then is a
 * copy: the hot paths use {@link wire} and {@link listItem}).
 */
export class StoreEntry implements UpstreamObject {
  /** `namespace/name`, or `name` for cluster-scoped objects. */
  readonly key: string;
  /** "" for cluster-scoped objects. */
  readonly namespace: string;
  readonly name: string;
  readonly rv: bigint;
  /** `metadata.uid` (pending deletes compare it: `server/serve-cache.ts`). */
  readonly uid: string | undefined;
  readonly labels: Readonly<Record<string, string>> | undefined;
  readonly fields: FieldSet;
  /** The stored bytes: the LIST item when {@link #prefix} is set, else the upstream's bytes. */
  readonly #bytes: Buffer;
  /** The TypeMeta prefix removed from the upstream's bytes (shared per resource), if any. */
  readonly #prefix: Buffer | undefined;
  /** Only for a built-in kind whose bytes did not start with the prefix (not seen with real apiservers). */
  #listItemCopy: Buffer | undefined;
  readonly #resource: ResourceInfo;
  readonly #baseSize: number;
  /** The `metadata` value's span in {@link #bytes}, found on first use (-1 before): two numbers, no copy. */
  #metaStart = -1;
  #metaEnd = 0;
  #copies = 0;
  #meter: Meter | undefined;

  constructor(resource: ResourceInfo, obj: UpstreamObject) {
    const meta = obj.object.metadata;
    this.#resource = resource;
    this.namespace = intern(meta.namespace ?? '');
    this.name = meta.name;
    this.key = objectKey(this.namespace, this.name);
    this.rv = parseRV(meta.resourceVersion);
    // The bytes once, and of the parsed object only what the cache reads (issue 12: the whole
    // parsed object cost ~2.5× its JSON bytes in V8's heap, kept for every entry).
    const prefix = listItemPrefix(resource, obj.raw);
    this.#prefix = prefix;
    this.#bytes = prefix ? strippedCopy(obj.raw, prefix.length) : ownedBytes(obj.raw);
    this.uid = meta.uid;
    this.labels = meta.labels === undefined ? undefined : internValues(meta.labels);
    this.fields = internFields(selectableFields(resource, obj.object), this.name, this.namespace);
    this.#baseSize =
      ENTRY_OVERHEAD +
      bufferBytes(this.#bytes) +
      parsedBytes(this.key) +
      parsedBytes(this.uid) +
      (this.labels ? parsedBytes(this.labels) : 0) +
      fieldBytes(this.fields);
  }

  /**
   * What the cache keeps of the object's metadata (name, namespace, RV, uid, labels), built on
   * each call: kept as the entry's own fields, not as parsed objects (~130 bytes an entry less).
   */
  get object(): KubeObject {
    const m: ObjectMeta = { name: this.name, resourceVersion: String(this.rv) };
    if (this.namespace !== '') m.namespace = this.namespace;
    if (this.uid !== undefined) m.uid = this.uid;
    if (this.labels !== undefined) m.labels = this.labels as Record<string, string>;
    return { metadata: m };
  }

  /** The object as the upstream sent it (WITH kind/apiVersion); a copy when stored stripped. */
  get raw(): Buffer {
    return this.#prefix ? Buffer.concat(this.wire) : this.#bytes;
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
    return this.#prefix ? [this.#prefix, this.#bytes.subarray(1)] : [this.#bytes];
  }

  /** Bytes as an item of a LIST answer (see `listItemBytes`): the stored bytes themselves. */
  get listItem(): Buffer {
    if (this.#prefix || !this.#resource.builtIn) return this.#bytes;
    if (!this.#listItemCopy) {
      this.#listItemCopy = listItemBytes(this.#resource, this.#bytes);
      this.#grow(bufferBytes(this.#listItemCopy));
    }
    return this.#listItemCopy;
  }

  /**
   * The object as an ADDED watch event line, for initial snapshots: chunks around a view of the
   * stored bytes, nothing encoded or kept (issue 12: a kept copy per entry, built once any watch
   * asked for initial events, doubled the store; issue 11 item 15: nor is anything re-encoded
   * per watcher).
   */
  get addedLine(): readonly Buffer[] {
    return this.#prefix
      ? eventChunks('ADDED', this.#prefix, this.#bytes.subarray(1))
      : eventChunks('ADDED', undefined, this.#bytes);
  }

  /**
   * The object's top-level `metadata` value: a view of the stored bytes (its span found by a
   * JSON scan on first use and kept as two numbers; `{}` when absent).
   */
  get metadata(): Buffer {
    if (this.#metaStart < 0) {
      const [start, end] = metadataSpan(this.#bytes);
      this.#metaStart = start;
      this.#metaEnd = end;
    }
    return this.#metaEnd > this.#metaStart
      ? this.#bytes.subarray(this.#metaStart, this.#metaEnd)
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

  #grow(bytes: number): void {
    this.#copies += bytes;
    this.#meter?.(bytes);
  }

  /** Sends the growth of this entry (copies built later) to `meter`; undefined detaches it. */
  meter(meter: Meter | undefined): void {
    this.#meter = meter;
  }

  /**
   * Bytes this entry holds (see `memory-size.ts`): the stored bytes, the metadata and fields
   * kept, the copies built so far (ADDED line) and its bookkeeping.
   */
  get size(): number {
    return this.#baseSize + this.#copies;
  }

  matches(label: LabelSelector, field: FieldSelector): boolean {
    return label.matches(this.labels) && field.matches(this.fields);
  }
}

/**
 * `raw` without its first `prefixLength` bytes, behind a `{`, in memory of its own (not a slice
 * of a shared pool slab or of the chunk it was decoded from: one kept slice pins all of it).
 */
function strippedCopy(raw: Buffer, prefixLength: number): Buffer {
  const out = Buffer.allocUnsafeSlow(raw.length - prefixLength + 1);
  out[0] = 0x7b; // '{'
  raw.copy(out, 1, prefixLength);
  return out;
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
 * `key → entry` plus indexes. Invariant: every entry is in `#byKey`, in exactly one namespace
 * bucket, and in one bucket per indexed field; buckets are deleted when they become empty.
 */
export class Store {
  readonly #resource: ResourceInfo;
  readonly #indexed: readonly string[];
  #byKey: Bucket = new Map();
  #byNamespace = new Map<string, Bucket>();
  #byField = new Map<string, Map<string, Bucket>>();
  #bytes = 0;
  /** Where the entries' later growth is counted. */
  readonly #meter: Meter = (bytes) => {
    this.#bytes += bytes;
  };
  /** All keys in order, rebuilt lazily after a key is added or removed (not on updates). */
  #sortedKeys: string[] | undefined;

  constructor(resource: ResourceInfo) {
    this.#resource = resource;
    this.#indexed = indexedFields(resource);
    for (const f of this.#indexed) this.#byField.set(f, new Map());
  }

  get size(): number {
    return this.#byKey.size;
  }

  /** Bytes the entries hold (sum of {@link StoreEntry.size}). */
  get bytes(): number {
    return this.#bytes;
  }

  /** Builds an entry for `obj` (parses its RV, labels and fields). */
  entry(obj: UpstreamObject): StoreEntry {
    return new StoreEntry(this.#resource, obj);
  }

  get(key: string): StoreEntry | undefined {
    return this.#byKey.get(key);
  }

  /** Inserts or replaces; returns the previous entry. */
  put(e: StoreEntry): StoreEntry | undefined {
    const prev = this.#byKey.get(e.key);
    if (prev) this.#unindex(prev);
    else this.#sortedKeys = undefined;
    this.#byKey.set(e.key, e);
    this.#bytes += e.size;
    e.meter(this.#meter);
    addTo(this.#byNamespace, e.namespace, e);
    for (const f of this.#indexed) addTo(this.#byField.get(f)!, e.fields[f] ?? '', e);
    return prev;
  }

  /** Removes `key`; returns the removed entry. */
  remove(key: string): StoreEntry | undefined {
    const prev = this.#byKey.get(key);
    if (prev) {
      this.#unindex(prev);
      this.#byKey.delete(key);
      this.#sortedKeys = undefined;
    }
    return prev;
  }

  /**
   * Replaces the whole contents with `entries` (built beforehand with {@link entry}, so nothing
   * here can throw half-way): the new maps are filled aside and swapped in at the end.
   */
  replaceAll(entries: readonly StoreEntry[]): void {
    const next = new Store(this.#resource);
    for (const e of entries) next.put(e);
    for (const e of this.#byKey.values()) e.meter(undefined);
    for (const e of entries) e.meter(this.#meter);
    this.#byKey = next.#byKey;
    this.#byNamespace = next.#byNamespace;
    this.#byField = next.#byField;
    this.#bytes = next.#bytes;
    this.#sortedKeys = undefined;
  }

  #unindex(e: StoreEntry): void {
    this.#bytes -= e.size;
    e.meter(undefined);
    removeFrom(this.#byNamespace, e.namespace, e.key);
    for (const f of this.#indexed) removeFrom(this.#byField.get(f)!, e.fields[f] ?? '', e.key);
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
      const e = this.#byKey.get(objectKey(namespace, name));
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
    return { entries: this.#inKeyOrder(), sorted: true };
  }

  *#inKeyOrder(): Generator<StoreEntry> {
    if (!this.#sortedKeys) this.#sortedKeys = [...this.#byKey.keys()].sort(compareKeys);
    for (const k of this.#sortedKeys) yield this.#byKey.get(k)!;
  }

  /** All entries (unordered). */
  values(): IterableIterator<StoreEntry> {
    return this.#byKey.values();
  }
}

const EMPTY: Bucket = new Map();

/** Key order of etcd and the apiserver's btree (byte order; keys are ASCII). */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function addTo(index: Map<string, Bucket>, value: string, e: StoreEntry): void {
  let b = index.get(value);
  if (!b) {
    b = new Map();
    index.set(value, b);
  }
  b.set(e.key, e);
}

function removeFrom(index: Map<string, Bucket>, value: string, key: string): void {
  const b = index.get(value);
  if (!b) return;
  b.delete(key);
  if (b.size === 0) index.delete(value);
}
