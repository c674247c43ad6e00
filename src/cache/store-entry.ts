/**
 * One stored object of the watch cache (apiserver `storage/cacher/store.go` `storeElement`: key,
 * object, labels, fields), its bytes in the store's slabs; the key and resourceVersion helpers.
 */
import type { MetadataVersion } from '../apimachinery/accept.ts';
import type { FieldReader, FieldSelector } from '../apimachinery/field-selector.ts';
import { type FieldSet, selectableFields } from '../apimachinery/field-sets.ts';
import { topLevelValueSpan } from '../apimachinery/json-span.ts';
import type { LabelSelector } from '../apimachinery/label-selector.ts';
import type { ByteRef } from '../apimachinery/list-items.ts';
import type { KubeObject, ObjectMeta, UpstreamObject } from '../apimachinery/object.ts';
import { eventChunks, LINE_SOURCE, type SourcedChunks } from '../apimachinery/watch-event.ts';
import { ResourceVersionError } from '../util/errors.ts';
import { listItemBytes, listItemPrefix } from './encoding.ts';
import { type EntryContext, intern } from './entry-context.ts';
import { ENTRY_OVERHEAD, parsedBytes } from './memory-size.ts';
import { GET_END, metadataHead, metadataSpan, OBJECT_END } from './metadata-view.ts';
import { Slab } from './slab.ts';

/** {@link StoreEntry} `#meta` bits: the stored bytes are the stripped LIST item. */
const STRIPPED = 1;
/** …the entry was released (its slab bytes counted as free). */
const RELEASED = 2;
/** …the metadata span is known: start × {@link META_START}, end × {@link META_END}. */
const META_KNOWN = 4;
const META_START = 8;
const META_END = 2048;
/**
 * Bytes an encoder keeps for one object version in the store's slabs ({@link StoreEntry.keep}):
 * `slab.buf[offset, offset + length)`, for slot `slot`; `next`: another slot's. Only once an
 * entry keeps two slots: the first is kept in the entry's own fields.
 */
interface KeptPlace {
  readonly slot: number;
  slab: EntrySlab;
  offset: number;
  readonly length: number;
  next: KeptPlace | undefined;
}

/** A slab of a store's entries (its owner: what they share). */
type EntrySlab = Slab<EntryContext>;

/**
 * Slots an entry keeps bytes for are below this. A slot kept in the entry's own fields is packed
 * in one number: `offset × KEPT_OFFSET + length × KEPT_SLOTS + slot` (exact below 2^53: offsets
 * in a shared slab are below 2^20, the length below {@link KEPT_INLINE_LENGTH}; an own slab's
 * offset is 0).
 */
const KEPT_SLOTS = 8;
const KEPT_INLINE_LENGTH = 2 ** 28;
const KEPT_OFFSET = KEPT_INLINE_LENGTH * KEPT_SLOTS;

/** The `metadata` of an object without one (read, never written). */
const NO_METADATA = Buffer.from('{}');

/** Spans past these are not kept (found again on each use; not seen: metadata comes first). */
const META_START_LIMIT = 256;
const META_END_LIMIT = 1 << 20;

/**
 * One stored object (issue 12). Its bytes live in a slab shared by the store's entries
 * (`slab.ts`: an offset and a length, not a Buffer each — a Buffer of its own cost ~490 bytes
 * besides its contents). For a built-in kind whose upstream bytes start with
 * `{"kind":K,"apiVersion":V,` (what the apiserver writes) the stored bytes are the object as a
 * LIST item, `{` + the rest, and the TypeMeta prefix is shared per resource; a GET answer and a
 * watch event are written from that prefix plus a view of the stored bytes, a LIST copies the
 * stored bytes from where they are ({@link listItemAt}: no view or copy per item, none built on
 * first use). Custom resources keep their
 * bytes whole (their list items carry kind and apiVersion). What the cache reads of the parsed
 * object is kept as fields (name, namespace, RV, labels and the selectable fields besides name
 * and namespace — both shared with equal recent sets); the uid is read from the bytes when
 * asked. Immutable once created, except that the store may move its bytes to another slab
 * (compaction: same bytes, views already handed out stay valid). Satisfies
 * {@link UpstreamObject} for the reflector's `compact` (its `raw` then is a copy: the hot paths
 * use {@link wire} and {@link listItemAt}).
 */
export class StoreEntry implements UpstreamObject, FieldReader {
  /** "" for cluster-scoped objects. */
  readonly namespace: string;
  readonly name: string;
  readonly rv: bigint;
  readonly labels: Readonly<Record<string, string>> | undefined;
  /**
   * The selectable fields besides `metadata.name` and `metadata.namespace` (read from the entry's
   * own), shared with recent equal sets (`EntryContext.fields`); undefined when there are none.
   */
  readonly #fields: FieldSet | undefined;
  /**
   * Where the stored bytes are: `#slab.buf[#offset, #offset + #length)`; the slab's owner is the
   * store's context.
   */
  #slab: EntrySlab;
  #offset: number;
  readonly #length: number;
  /** {@link STRIPPED}, {@link RELEASED} and the `metadata` span once found (see META_*). */
  #meta: number;
  /**
   * What encoders keep for this version ({@link keep}), in the store's slabs: one slot in the
   * entry's own fields (`#kept` its slab, `#keptAt` its offset, length and slot packed, see
   * KEPT_SLOTS: a KeptPlace object cost 64 heap bytes an entry), or, from two slots on (or a
   * length past KEPT_INLINE_LENGTH), a chain.
   */
  #kept: EntrySlab | KeptPlace | undefined;
  #keptAt: number;

  constructor(ctx: EntryContext, obj: UpstreamObject) {
    const meta = obj.object.metadata;
    const resource = ctx.resource;
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
    this.#kept = undefined;
    this.#keptAt = 0;
    this.labels = meta.labels === undefined ? undefined : ctx.labels(meta.labels);
    const fields = otherFields(selectableFields(resource, obj.object));
    this.#fields = fields === undefined ? undefined : ctx.fields(fields);
  }

  /** What the store's entries share (the owner of the slab holding this entry's bytes). */
  get #ctx(): EntryContext {
    return this.#slab.owner;
  }

  /**
   * `namespace/name`, or `name` for cluster-scoped objects: built on each call (issue 12: not
   * kept per entry; hot paths compare entries with {@link compareEntryKeys} instead).
   */
  get key(): string {
    return objectKey(this.namespace, this.name);
  }

  /** `metadata.uid`, read from the stored bytes (pending deletes compare it: `server/read-your-writes/consistent-read.ts`). */
  get uid(): string | undefined {
    const m = this.metadata;
    const span = topLevelValueSpan(m, 'uid');
    if (!span) return undefined;
    const v: unknown = JSON.parse(m.toString('utf8', span[0], span[1]));
    return typeof v === 'string' ? v : undefined;
  }

  /** The selectable fields (`fields.Set`), built on each call (hot paths read {@link field}). */
  get fields(): FieldSet {
    const f: Record<string, string> = { ...this.#fields, 'metadata.name': this.name };
    if (this.#ctx.resource.namespaced) f['metadata.namespace'] = this.namespace;
    return f;
  }

  /** The selectable field `name`'s value ({@link fields}`[name]`), "" when the set lacks it. */
  field(name: string): string {
    if (name === 'metadata.name') return this.name;
    if (name === 'metadata.namespace') return this.#ctx.resource.namespaced ? this.namespace : '';
    const f = this.#fields;
    return f !== undefined && Object.hasOwn(f, name) ? f[name]! : '';
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
   * apiservers, re-encoded on each call and not kept). A LIST reads {@link listItemAt}.
   */
  get listItem(): Buffer {
    const ref: ByteRef = { buf: this.#slab.buf, start: 0, end: 0 };
    this.listItemAt(ref);
    return ref.buf.subarray(ref.start, ref.end);
  }

  /**
   * Where {@link listItem}'s bytes are, without a view (a LIST reads 100,000s: a view each was
   * ~15 MiB of old-space garbage per LIST of 100,000, issue 32): sets `ref` to the slab's buffer
   * and the item's `[start, end)` in it (a re-encoded item: its own Buffer). Valid as a view's
   * would be (compaction copies the bytes elsewhere; no slab space is reused).
   */
  listItemAt(ref: ByteRef): void {
    if (this.#meta & STRIPPED || !this.#ctx.resource.builtIn) {
      ref.buf = this.#slab.buf;
      ref.start = this.#offset;
      ref.end = this.#offset + this.#length;
      return;
    }
    const b = listItemBytes(this.#ctx.resource, this.#bytes);
    ref.buf = b;
    ref.start = 0;
    ref.end = b.length;
  }

  /**
   * The object as an ADDED watch event line, for initial snapshots: chunks around a view of the
   * stored bytes, nothing encoded or kept (issue 12: a kept copy per entry, built once any watch
   * asked for initial events, doubled the store; issue 11 item 15: nor is anything re-encoded
   * per watcher). The chunk array names this entry ({@link LINE_SOURCE}).
   */
  get addedLine(): SourcedChunks {
    const w = this.wire;
    const c: Buffer[] & { [LINE_SOURCE]?: StoreEntry } =
      w.length === 2 ? eventChunks('ADDED', w[0], w[1]!) : eventChunks('ADDED', undefined, w[0]!);
    c[LINE_SOURCE] = this;
    return c;
  }

  /**
   * The object's top-level `metadata` value: a view of the stored bytes (its span found by a
   * JSON scan on first use and kept packed in one number; `{}` when absent). A metadata LIST
   * reads {@link metadataAt}.
   */
  get metadata(): Buffer {
    const ref: ByteRef = { buf: this.#slab.buf, start: 0, end: 0 };
    this.metadataAt(ref);
    return ref.buf.subarray(ref.start, ref.end);
  }

  /** Where {@link metadata}'s bytes are, without a view (as {@link listItemAt}). */
  metadataAt(ref: ByteRef): void {
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
    if (end > start) {
      ref.buf = this.#slab.buf;
      ref.start = this.#offset + start;
      ref.end = this.#offset + end;
    } else {
      ref.buf = NO_METADATA;
      ref.start = 0;
      ref.end = NO_METADATA.length;
    }
  }

  /** The object as a PartialObjectMetadata GET answer (`meta.k8s.io/<version>`), as chunks. */
  metadataWire(version: MetadataVersion): readonly Buffer[] {
    return [metadataHead(version), this.metadata, GET_END];
  }

  /** The object as the ADDED line of a metadata watch's initial events, chunks around a view. */
  metadataAddedLine(version: MetadataVersion): SourcedChunks {
    const [prefix, metadata, end] = eventChunks('ADDED', metadataHead(version), this.metadata);
    const c: Buffer[] & { [LINE_SOURCE]?: StoreEntry } = [prefix!, metadata!, OBJECT_END, end!];
    c[LINE_SOURCE] = this;
    return c;
  }

  /**
   * The bytes an encoder kept in `slot` for this object version ({@link keep}): a view, or
   * undefined when none were kept.
   */
  kept(slot: number): Buffer | undefined {
    const kept = this.#kept;
    if (kept instanceof Slab) {
      const at = this.#keptAt;
      if (at % KEPT_SLOTS !== slot) return undefined;
      const offset = Math.floor(at / KEPT_OFFSET);
      return kept.buf.subarray(offset, offset + keptLength(at));
    }
    for (let k = kept; k !== undefined; k = k.next)
      if (k.slot === slot) return k.slab.buf.subarray(k.offset, k.offset + k.length);
    return undefined;
  }

  /**
   * Where slot `slot`'s kept bytes are, without a view of them (a LIST of every entry reads
   * 10,000s: a Buffer view each cost an allocation, issue 32's CPU goal): sets `ref` to the
   * slab's buffer and the bytes' `[start, end)` in it and returns true; false when none is kept.
   * The bytes stay valid as a view's would (compaction copies them elsewhere, the old slab
   * keeps them while referenced).
   */
  keptAt(slot: number, ref: ByteRef): boolean {
    const kept = this.#kept;
    if (kept instanceof Slab) {
      const at = this.#keptAt;
      if (at % KEPT_SLOTS !== slot) return false;
      const offset = Math.floor(at / KEPT_OFFSET);
      ref.buf = kept.buf;
      ref.start = offset;
      ref.end = offset + keptLength(at);
      return true;
    }
    for (let k = kept; k !== undefined; k = k.next)
      if (k.slot === slot) {
        ref.buf = k.slab.buf;
        ref.start = k.offset;
        ref.end = k.offset + k.length;
        return true;
      }
    return false;
  }

  /**
   * Keeps a copy of `bytes` in `slot` for this object version (issue 32: its protobuf messages,
   * `server/protobuf-answers.ts`), in the store's slabs next to the JSON: no Buffer or other JS
   * object of its own (~300–600 heap bytes each, more than a plain pod's message), released
   * with the entry and moved by compaction like its JSON. Returns a view of the copy; the first
   * copy of a slot stays (a slot is kept once). A released entry keeps nothing: then a copy of
   * its own is returned. Kept bytes are counted in the slabs' counters, not in {@link size}.
   */
  keep(slot: number, bytes: Uint8Array): Buffer {
    const have = this.kept(slot);
    if (have) return have;
    if (this.#meta & RELEASED) return Buffer.from(bytes);
    if (!(slot >= 0 && slot < KEPT_SLOTS && Number.isInteger(slot)))
      throw new RangeError(`kept slot ${slot}`);
    const slab = this.#ctx.arena.copy(bytes, 0, bytes.length);
    const offset = slab.used - bytes.length;
    const kept = this.#kept;
    if (kept === undefined && bytes.length < KEPT_INLINE_LENGTH) {
      this.#kept = slab;
      this.#keptAt = offset * KEPT_OFFSET + bytes.length * KEPT_SLOTS + slot;
    } else {
      const next = kept instanceof Slab ? this.#inlinePlace(kept) : kept;
      this.#kept = { slot, slab, offset, length: bytes.length, next };
    }
    return slab.buf.subarray(offset, offset + bytes.length);
  }

  /** The slot kept in the entry's own fields (in `slab`) as a {@link KeptPlace}. */
  #inlinePlace(slab: EntrySlab): KeptPlace {
    const at = this.#keptAt;
    const offset = Math.floor(at / KEPT_OFFSET);
    return { slot: at % KEPT_SLOTS, slab, offset, length: keptLength(at), next: undefined };
  }

  /**
   * Bytes this entry holds (see `memory-size.ts`): the stored bytes, the strings, labels and
   * fields kept, and its bookkeeping (labels and field sets are counted whole even when shared).
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
    const arena = this.#ctx.arena;
    arena.release(this.#slab, this.#length);
    const kept = this.#kept;
    if (kept instanceof Slab) arena.release(kept, keptLength(this.#keptAt));
    else for (let k = kept; k !== undefined; k = k.next) arena.release(k.slab, k.length);
  }

  /** Moves the stored bytes to the arena's current slab when theirs is sparse (compaction). */
  compactBytes(): void {
    const arena = this.#ctx.arena;
    if (this.#meta & RELEASED) return;
    const kept = this.#kept;
    if (kept instanceof Slab) {
      if (kept.sparse && kept !== arena.current) {
        const at = this.#keptAt;
        const length = keptLength(at);
        const offset = Math.floor(at / KEPT_OFFSET);
        const slab = arena.copy(kept.buf, offset, offset + length);
        arena.release(kept, length);
        this.#kept = slab;
        this.#keptAt = (slab.used - length) * KEPT_OFFSET + (at % KEPT_OFFSET);
      }
    } else
      for (let k = kept; k !== undefined; k = k.next) {
        const from = k.slab;
        if (!from.sparse || from === arena.current) continue;
        k.slab = arena.copy(from.buf, k.offset, k.offset + k.length);
        arena.release(from, k.length);
        k.offset = k.slab.used - k.length;
      }
    const old = this.#slab;
    if (!old.sparse || old === arena.current) return;
    const slab = arena.copy(old.buf, this.#offset, this.#offset + this.#length);
    arena.release(old, this.#length);
    this.#slab = slab;
    this.#offset = slab.used - this.#length;
  }

  matches(label: LabelSelector, field: FieldSelector): boolean {
    return label.matches(this.labels) && (field.empty || field.matchesReader(this));
  }
}

/** The length packed in a `#keptAt` (see KEPT_SLOTS). */
function keptLength(at: number): number {
  return Math.floor((at % KEPT_OFFSET) / KEPT_SLOTS);
}

/** `f` without `metadata.name` and `metadata.namespace` (the entry's own fields), undefined when empty. */
function otherFields(f: FieldSet): FieldSet | undefined {
  const out: Record<string, string> = {};
  let any = false;
  for (const k in f)
    if (k !== 'metadata.name' && k !== 'metadata.namespace') {
      out[k] = f[k]!;
      any = true;
    }
  return any ? out : undefined;
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
