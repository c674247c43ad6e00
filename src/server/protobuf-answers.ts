/**
 * Protobuf answers from the cache (issue 32): which encoding a cache read answers in, and the
 * protobuf LIST, GET and watch-event bytes built from the cached JSON with the generated schema
 * table (`apimachinery/protobuf/`), byte for byte the apiserver's (test/e2e/protobuf-encode.test.ts).
 * The apiserver answers protobuf when the Accept clause it picks takes its protobuf serializer
 * (`negotiate.go`); so does the cache with `--protobuf-answers=cache` (the default; with `json`
 * such a client gets the JSON it also accepts, or the upstream's answer). Each object's message
 * is encoded once per object version and kept with it (see {@link listItem}). Whatever the encoder
 * cannot write exactly (`CannotEncode`: raw JSON, a field the table does not know, a kind without
 * a protobuf form) goes upstream as `protobuf-inexact` before anything is written; a watch event it cannot
 * encode ends that watch (the client re-watches, its relist goes upstream).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { cacheForm, type MetadataVersion, protobufForm } from '../apimachinery/accept.ts';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { type ByteRef, itemView, itemViews } from '../apimachinery/list-items.ts';
import { CannotEncode, encodeFromText } from '../apimachinery/protobuf/encode-object.ts';
import {
  encodeParsed,
  keepListItem,
  listAnswer,
  listAnswerFrame,
  listAnswerItemsFirst,
  objectAnswerFrame,
  PROTOBUF_CONTENT_TYPE,
  unknownEnvelope,
  watchFrame,
  watchFrameAround,
} from '../apimachinery/protobuf/envelope.ts';
import { kindSpec, mayHoldRawJSON, schemaMatches } from '../apimachinery/protobuf/schema.ts';
import {
  copyKept,
  fieldPrefixLength,
  keptLength,
  keptLengthAt,
  keptMessage,
} from '../apimachinery/protobuf/spliced.ts';
import { lineSource, type WireLine } from '../apimachinery/watch-event.ts';
import { allocTransient } from '../util/buffer-pool.ts';
import type { ListPage } from './cache-api.ts';
import { chunksBody, type FilledBody } from './filled-body.ts';
import { keptList, keptListBody } from './kept-list-body.ts';

/** How a cache read is answered: its encoding, and the PartialObjectMetadata version asked for, if any. */
export interface AnswerEncoding {
  encoding: 'json' | 'protobuf';
  metadata?: MetadataVersion;
}

/**
 * Whether protobuf answers are on for a request: `true`, or the reason they are not —
 * `protobuf-off` (`--protobuf-answers=json`), `protobuf-version` (`upstreamVersion` given and
 * the apiserver's minor version, as last checked, is not the schema table's, or not known yet).
 */
export function protobufAnswers(ctx: {
  protobuf: boolean;
  upstreamVersion?: () => string | undefined;
}): true | 'protobuf-off' | 'protobuf-version' {
  if (!ctx.protobuf) return 'protobuf-off';
  if (ctx.upstreamVersion && !schemaMatches(ctx.upstreamVersion())) return 'protobuf-version';
  return true;
}

/**
 * The encoding of a cache answer to `headers`' Accept: protobuf when the apiserver would answer
 * protobuf, `protobuf` is on (`true`, see {@link protobufAnswers}; `false` reads as
 * `protobuf-off`) and the kind has a protobuf form; else the JSON form the client accepts; else
 * the reason to go upstream: why protobuf is off when only protobuf would do, `media-type` for a
 * kind without protobuf (custom resources: the apiserver negotiates among JSON, YAML and CBOR only).
 */
export function answerEncoding(
  headers: IncomingHttpHeaders,
  protobuf: boolean | 'protobuf-off' | 'protobuf-version',
  resource: ResourceInfo,
): AnswerEncoding | 'protobuf-off' | 'protobuf-version' | 'media-type' {
  const accept = Array.isArray(headers.accept) ? headers.accept.join(',') : headers.accept;
  const hasPb = hasProtobuf(resource);
  const pb = protobuf === true && hasPb ? protobufForm(accept) : undefined;
  const form = pb ?? cacheForm(accept);
  if (!form) return !hasPb ? 'media-type' : typeof protobuf === 'string' ? protobuf : 'protobuf-off';
  const encoding = pb ? 'protobuf' : 'json';
  return form.form === 'metadata' ? { encoding, metadata: form.version } : { encoding };
}

/**
 * Whether a client answered `protobuf` for `headers` may get JSON instead when the protobuf bytes
 * cannot be exact: some clause with q > 0 takes the same form in JSON (the object, or the same
 * PartialObjectMetadata version). client-go decodes by the answer's Content-Type, so a
 * protobuf-first client (`protobuf,json`, or protobuf then the wildcard) reads it; the apiserver would have
 * answered protobuf.
 */
export function jsonFallback(
  headers: IncomingHttpHeaders,
  resource: ResourceInfo,
  metadata: MetadataVersion | undefined,
): boolean {
  const json = answerEncoding(headers, false, resource);
  return typeof json !== 'string' && json.metadata === metadata;
}

const PARTIAL = 'apimachinery/pkg/apis/meta/v1.PartialObjectMetadata';

/** Headers of a protobuf answer. */
export const PROTOBUF_HEADERS = { 'content-type': PROTOBUF_CONTENT_TYPE };

function typeOf(resource: ResourceInfo): string {
  const spec = kindSpec(resource.apiVersion, resource.kind);
  if (!spec) throw new CannotEncode('unknown-kind', `${resource.apiVersion}/${resource.kind}`);
  return spec.name;
}

/**
 * A stored object as the kept messages know it (a cache entry, `StoreEntry`): its bytes as a LIST
 * item, the same bytes for as long as the entry lives (the store may move them; offsets into
 * them stay valid), and slots for bytes kept with it in the store's slabs.
 */
export interface KeepingEntry {
  readonly listItem: Buffer;
  kept(slot: number): Buffer | undefined;
  /** Where {@link listItem}'s bytes are, without a view (`StoreEntry.listItemAt`). */
  listItemAt?(ref: ByteRef): void;
  /** Where the slot's kept bytes are, without a view (`StoreEntry.keptAt`); false when none. */
  keptAt?(slot: number, ref: ByteRef): boolean;
  keep(slot: number, bytes: Uint8Array): Buffer;
}

/** The entry's slot of its object message, and of its PartialObjectMetadata message. */
const OBJECT_SLOT = 0;
const PARTIAL_SLOT = 1;

/** `key` when it can keep bytes (a cache entry), else undefined. */
function keeping(key: object | undefined): KeepingEntry | undefined {
  return key !== undefined && typeof (key as Partial<KeepingEntry>).keep === 'function'
    ? (key as KeepingEntry)
    : undefined;
}

const NO_JSON = Buffer.alloc(0);

/** Scratch for `keptAt` and for the JSON of a LIST's item (one LIST is set up at a time: synchronously). */
const keptRef: ByteRef = { buf: NO_JSON, start: 0, end: 0 };
const jsonRef: ByteRef = { buf: NO_JSON, start: 0, end: 0 };

/** Sets `ref` to the whole of `b`. */
function setRef(ref: ByteRef, b: Buffer): void {
  ref.buf = b;
  ref.start = 0;
  ref.end = b.length;
}

let messageEncodes = 0;

/**
 * How many object messages this process has encoded for LIST, GET and watch events of stored
 * objects (a count for tests and profiles, not a metric): one per object version and message
 * type however often it is read.
 */
export function protobufMessageEncodes(): number {
  return messageEncodes;
}

/**
 * Bytes the kept object message of `key` (a cache entry) holds in the store's slabs, besides the
 * stored JSON it shares; undefined when none is kept: for tests and profiles.
 */
export function protobufKeptBytes(key: object): number | undefined {
  return keeping(key)?.kept(OBJECT_SLOT)?.length;
}

/** The message type of core/v1 Secrets (`apimachinery/protobuf/schema.json`): kept without the dictionary. */
const SECRET_TYPE = 'api/core/v1.Secret';

/** The PartialObjectMetadata of a parsed object. */
const partialOfObject = (o: unknown) => ({ metadata: (o as { metadata?: unknown }).metadata });

/**
 * The list item field of `key`'s object (its PartialObjectMetadata with `metadata`) in the kept
 * form (`apimachinery/protobuf/spliced.ts`), and the JSON its spans point into. Each stored
 * object's message is encoded once and reused by every LIST, GET and watch event until the
 * object changes: kept in the entry's slot (`StoreEntry.keep`: in the store's slabs, released
 * and compacted with the entry's JSON, one entry per object version, so a replaced or deleted
 * object's bytes go with it), its long strings (64 bytes or more: an annotation, FieldsV1's raw
 * JSON) not copied but read from the entry's stored JSON, and runs of the rest found in the first
 * kept message of its type read from the process's dictionary (spliced.ts; not for Secrets). The object's message and its
 * PartialObjectMetadata (the same bytes for `meta.k8s.io/v1` and `v1beta1`: the version is in
 * the envelope only) have a slot each. Filled lazily, by the first protobuf read of each object.
 * `key` not a cache entry: encoded and not kept. `text`: its JSON, the whole object or (with
 * `metadata`, `partial` true) its `metadata` value alone; `listItemBytes`: `key.listItem` when
 * the caller has it.
 */
function listItem(
  key: object | undefined,
  type: string,
  metadata: MetadataVersion | undefined,
  text: () => string,
  partial = false,
  listItemBytes?: Buffer,
): [item: Buffer, json: Buffer] {
  const entry = keeping(key);
  const slot = metadata === undefined ? OBJECT_SLOT : PARTIAL_SLOT;
  const json = entry ? (listItemBytes ?? entry.listItem) : NO_JSON;
  const have = entry?.kept(slot);
  if (have) return [have, json];
  // A Secret's bytes never enter the dictionary: it lives as long as the process, and the
  // first Secret's data (and metadata) would stay in memory and heap dumps after its deletion.
  const dictionary = type !== SECRET_TYPE;
  const item =
    metadata === undefined
      ? keepListItem(type, text(), entry && json, undefined, dictionary)
      : keepListItem(PARTIAL, text(), entry && json, partial ? partialOf : partialOfObject, dictionary);
  if (!entry) return [Buffer.from(item), json];
  messageEncodes++;
  return [entry.keep(slot, item), json];
}

/**
 * A GET answer: `json` is the object's whole JSON (with kind and apiVersion). With `metadata`,
 * its PartialObjectMetadata in `meta.k8s.io/<metadata>`. `key`: the cache entry the JSON is
 * (its message is kept for it). Throws {@link CannotEncode}.
 */
export function protobufGet(
  resource: ResourceInfo,
  json: readonly Buffer[],
  metadata?: MetadataVersion,
  key?: object,
): Buffer {
  return withinStack(() => {
    const type = typeOf(resource); // a kind the apiserver has no protobuf for answers 406 in any form
    const text = () => (json.length === 1 ? json[0]! : Buffer.concat(json)).toString('utf8');
    const [item, itemJSON] = listItem(key, type, metadata, text);
    // The message is the kept item past its field prefix, copied straight into the answer.
    const from = fieldPrefixLength(item);
    const to = keptLength(item);
    const [answer, at] =
      metadata === undefined
        ? objectAnswerFrame(resource.apiVersion, resource.kind, to - from)
        : objectAnswerFrame(`meta.k8s.io/${metadata}`, 'PartialObjectMetadata', to - from);
    copyKept(item, itemJSON, from, to, answer, at);
    return answer;
  });
}

/**
 * `encode()`, an object nested deeper than the JS stack declined: the encoder (and V8's
 * JSON.parse reviver, JSON.stringify of a FieldsV1) recurse per level, and a CRD's schema or
 * its FieldsV1 may nest thousands deep (the apiserver decodes up to 10,000). Throws
 * {@link CannotEncode} (`too-deep`), or what `encode` throws.
 */
function withinStack<T>(encode: () => T): T {
  try {
    return encode();
  } catch (err) {
    if (err instanceof RangeError) throw new CannotEncode('too-deep', err.message);
    throw err;
  }
}

/** A PartialObjectMetadata around a list item's `metadata` value. */
const partialOf = (metadata: unknown) => ({ metadata });

/**
 * A LIST answer from a cache page (`items`: list items, or with `metadata` the objects'
 * `metadata` values), as a body filled into the writer's batch buffers (`filled-body.ts`). With
 * `page.entries` (cache entries, {@link KeepingEntry}), each item's field is kept per entry (see
 * {@link listItem}) and the answer copies the kept pieces; without, one buffer
 * (`listAnswer`). Every item is encoded before this returns: Throws {@link CannotEncode}.
 */
export function protobufList(resource: ResourceInfo, page: ListPage, metadata?: MetadataVersion): FilledBody {
  return withinStack(() => encodeList(resource, page, metadata));
}

function encodeList(resource: ResourceInfo, page: ListPage, metadata?: MetadataVersion): FilledBody {
  const type = typeOf(resource);
  if (page.shardInfo !== undefined) throw new CannotEncode('unknown-field', 'ListMeta.shardInfo');
  const meta: Record<string, unknown> = { resourceVersion: page.resourceVersion };
  if (page.continue !== undefined) meta.continue = page.continue;
  if (page.remainingItemCount !== undefined) meta.remainingItemCount = page.remainingItemCount;
  const apiVersion = metadata === undefined ? resource.apiVersion : `meta.k8s.io/${metadata}`;
  const kind = metadata === undefined ? `${resource.kind}List` : 'PartialObjectMetadataList';
  const { items, entries } = page;
  const n = items.length;
  if (metadata === 'v1beta1') {
    // v1beta1's PartialObjectMetadataList numbers its fields the other way round (items 1,
    // metadata 2): the kept item fields, renumbered (`listAnswerItemsFirst`). Metadata items
    // are small: each is copied whole.
    const fields = new Array<Buffer>(n);
    for (let i = 0; i < n; i++) {
      const b = itemView(items, i);
      fields[i] = keptMessage(
        ...listItem(entries?.[i], type, metadata, () => b.utf8Slice(0, b.length), true),
      );
    }
    return chunksBody(listAnswerItemsFirst(apiVersion, kind, meta, fields));
  }
  if (entries) {
    const list = keptList(n);
    let itemBytes = 0;
    const slot = metadata === undefined ? OBJECT_SLOT : PARTIAL_SLOT;
    const ref = keptRef;
    const json = jsonRef;
    for (let i = 0; i < n; i++) {
      const entry = entries[i] as Partial<KeepingEntry> | undefined;
      // The JSON the spans point into, where it is: an object LIST's item, or (a metadata
      // LIST's items are `metadata` values) the entry's LIST item.
      if (!metadata) items.locate(i, json);
      else if (entry?.listItemAt) entry.listItemAt(json);
      else setRef(json, entry?.listItem ?? NO_JSON);
      // Kept already (every LIST after the first): where it is, no view, closure or tuple.
      if (entry?.keptAt?.(slot, ref) !== true) {
        // Not yet (the first protobuf LIST): encoded and kept, then addressed in the slab as
        // above, so the view `k` dies young instead of living until the LIST is written.
        const b = itemView(items, i);
        const [k, j] = listItem(
          entry,
          type,
          metadata,
          () => b.utf8Slice(0, b.length),
          true,
          metadata ? undefined : b,
        );
        if (entry?.keptAt?.(slot, ref) !== true) {
          // Not kept (not a store entry, or a released one): its own bytes and JSON.
          setRef(ref, k);
          setRef(json, j);
        }
      }
      list.bufs[i] = ref.buf;
      list.starts[i] = ref.start;
      list.ends[i] = ref.end;
      list.jsonBufs[i] = json.buf;
      list.jsonStarts[i] = json.start;
      itemBytes += list.lengths[i] = keptLengthAt(ref.buf, ref.start, ref.end);
    }
    const [head, tail] = listAnswerFrame(apiVersion, kind, meta, itemBytes);
    return keptListBody(head, list, tail);
  }
  const bufs = itemViews(items);
  return chunksBody(
    metadata === undefined
      ? [listAnswer(apiVersion, kind, meta, type, bufs)]
      : [listAnswer(apiVersion, kind, meta, PARTIAL, bufs, partialOf)],
  );
}

/** Event lines shared by watchers (the history's) → their frames: encoded once per event. */
const frames = new WeakMap<object, Buffer>();
let watchEncodes = 0;

/**
 * How many shared watch event lines this process has turned into protobuf frames: one per
 * (event line, format), however many watchers receive it (a count for tests and profiles, not a
 * metric).
 */
export function protobufWatchEncodes(): number {
  return watchEncodes;
}

/**
 * One watch event's protobuf frame from its JSON line (`{"type":…,"object":…}\n`, one Buffer or
 * its chunks): the object encoded by its own kind (an ERROR's Status, a metadata watch's
 * PartialObjectMetadata, a bookmark's empty object). A line Buffer shared by watchers is
 * framed once. A line written from a stored object (`lineSource`: an initial ADDED line, or a
 * live ADDED or MODIFIED line of the stored object) of `watched` (the watch's resource, and the
 * PartialObjectMetadata version of a metadata watch) reuses that object's kept message, or
 * encodes and keeps it: LIST, GET, the live event and every watcher's initial events share it.
 * Throws {@link CannotEncode}.
 */
export function protobufWatchFrame(
  line: WireLine,
  watched?: { resource: ResourceInfo; metadata?: MetadataVersion | undefined },
): Buffer {
  const shared = Buffer.isBuffer(line);
  const sourced = watched ? lineSource(line) : undefined;
  // A live line's source is the full object: a metadata watch's lines are built apart (no source).
  if (sourced && (!shared || watched!.metadata === undefined)) {
    if (shared) {
      const have = frames.get(line);
      if (have) return have;
    }
    const { source, type } = sourced;
    const m = watched!.metadata;
    const item = withinStack(() =>
      listItem(source, typeOf(watched!.resource), m, () =>
        Buffer.concat(m === undefined ? source.wire : source.metadataWire(m)).toString('utf8'),
      ),
    );
    const { apiVersion, kind } =
      m === undefined ? watched!.resource : { apiVersion: `meta.k8s.io/${m}`, kind: 'PartialObjectMetadata' };
    // The message is the kept item past its field prefix, copied straight into the frame.
    const [k, itemJSON] = item;
    const from = fieldPrefixLength(k);
    const to = keptLength(k);
    // A frame of its own line (an initial event) dies once written: carved from a shared block,
    // not malloc'd one by one (util/buffer-pool.ts). A shared line's frame is kept with the line.
    const [frame, at] = watchFrameAround(
      type,
      apiVersion,
      kind,
      to - from,
      shared ? undefined : allocTransient,
    );
    copyKept(k, itemJSON, from, to, frame, at);
    if (shared) {
      watchEncodes++;
      frames.set(line, frame);
    }
    return frame;
  }
  const have = frames.get(line);
  if (have) return have;
  const text = Buffer.isBuffer(line) ? line.toString('utf8') : Buffer.concat(line).toString('utf8');
  type Event = { type: string; object: { kind?: string; apiVersion?: string } };
  let e: Event | undefined;
  const msg = withinStack(() =>
    encodeFromText(text, (parsed) => {
      e = parsed as unknown as Event;
      const o = e.object;
      const spec = kindSpec(o.apiVersion ?? '', o.kind ?? '');
      if (!spec) throw new CannotEncode('unknown-kind', `${o.apiVersion}/${o.kind}`);
      return encodeParsed(spec.name, o);
    }),
  );
  watchEncodes++;
  const o = e!.object;
  const frame = watchFrame(e!.type, unknownEnvelope(o.apiVersion!, o.kind!, msg));
  frames.set(line, frame);
  return frame;
}

/** Whether a resource has a protobuf form in the table (custom resources have none). */
function hasProtobuf(resource: ResourceInfo): boolean {
  return resource.builtIn && kindSpec(resource.apiVersion, resource.kind) !== undefined;
}

/**
 * Whether a protobuf WATCH of the resource is served: not for kinds that may carry raw JSON
 * ({@link mayHoldRawJSON}: ControllerRevision, CRDs, DRA kinds with opaque parameters), whose
 * events the encoder may decline mid-stream; their LIST and GET are tried object by object.
 */
export function watchableInProtobuf(resource: ResourceInfo): boolean {
  const spec = kindSpec(resource.apiVersion, resource.kind);
  return spec !== undefined && !mayHoldRawJSON(spec.name);
}
