/**
 * Protobuf answers from the cache (issue 32): which encoding a cache read answers in, and the
 * protobuf LIST, GET and watch-event bytes built from the cached JSON with the generated schema
 * table (`apimachinery/protobuf/`), byte for byte the apiserver's (test/e2e/protobuf-encode.test.ts).
 * The apiserver answers protobuf when the Accept clause it picks takes its protobuf serializer
 * (`negotiate.go`); so does the cache with `--protobuf-answers=cache` (the default; with `json`
 * such a client gets the JSON it also accepts, or the upstream's answer). Each object's message
 * is encoded once per object version and kept (see {@link objectItems}). Whatever the encoder
 * cannot write exactly (`CannotEncode`: raw JSON, a field the table does not know, a kind without
 * a protobuf form) goes upstream as `protobuf-inexact` before anything is written; a watch event it cannot
 * encode ends that watch (the client re-watches, its relist goes upstream).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { cacheForm, type MetadataVersion, protobufForm } from '../apimachinery/accept.ts';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { CannotEncode, encodeFromText } from '../apimachinery/protobuf/encode-object.ts';
import {
  encodeListItem,
  encodeParsed,
  itemMessage,
  listAnswer,
  listAnswerChunks,
  objectAnswer,
  PROTOBUF_CONTENT_TYPE,
  unknownEnvelope,
  watchFrame,
} from '../apimachinery/protobuf/envelope.ts';
import { kindSpec, mayHoldRawJSON, schemaMatches } from '../apimachinery/protobuf/schema.ts';
import { LINE_SOURCE, type SourcedChunks, type WireLine } from '../apimachinery/watch-event.ts';
import type { ListPage } from './cache-api.ts';

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
 * Each stored object's protobuf message, encoded once and reused by every LIST, GET and initial
 * watch event until the object changes: kept as the list item field (`2: message`,
 * `encodeListItem`, so a LIST writes it as it is, with no copy) and keyed by the cache's entry
 * (one per object version), so a replaced or deleted object's bytes go with its entry.
 * `objectItems` holds the object's own message, `partialItems` its PartialObjectMetadata (the
 * same bytes for `meta.k8s.io/v1` and `v1beta1`: the version is in the envelope only). Filled
 * lazily, by the first protobuf read of each object; a pod's message is ~57% of its JSON.
 */
const objectItems = new WeakMap<object, Buffer>();
const partialItems = new WeakMap<object, Buffer>();
let messageEncodes = 0;

/**
 * How many object messages this process has encoded for LIST, GET and initial watch events
 * (a count for tests and profiles, not a metric): one per object version and message type
 * however often it is read.
 */
export function protobufMessageEncodes(): number {
  return messageEncodes;
}

/** The PartialObjectMetadata of a parsed object. */
const partialOfObject = (o: unknown) => ({ metadata: (o as { metadata?: unknown }).metadata });

/**
 * The list item field of `key`'s object (its PartialObjectMetadata with `metadata`), kept under
 * `key` (a cache entry; none: encoded and not kept). `text`: its JSON, the whole object or (with
 * `metadata`, `partial` true) its `metadata` value alone.
 */
function listItem(
  key: object | undefined,
  type: string,
  metadata: MetadataVersion | undefined,
  text: () => string,
  partial = false,
): Buffer {
  const map = metadata === undefined ? objectItems : partialItems;
  const have = key && map.get(key);
  if (have) return have;
  const item =
    metadata === undefined
      ? encodeListItem(type, text())
      : encodeListItem(PARTIAL, text(), partial ? partialOf : partialOfObject);
  if (key) {
    messageEncodes++;
    map.set(key, item);
  }
  return item;
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
    const message = itemMessage(listItem(key, type, metadata, text));
    return metadata === undefined
      ? objectAnswer(resource.apiVersion, resource.kind, message)
      : objectAnswer(`meta.k8s.io/${metadata}`, 'PartialObjectMetadata', message);
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
 * `metadata` values), as chunks. With `page.entries`, each item's field is kept per entry (see
 * {@link objectItems}) and the answer is the kept fields as they are; without, one buffer
 * (`listAnswer`). Throws {@link CannotEncode}.
 */
export function protobufList(resource: ResourceInfo, page: ListPage, metadata?: MetadataVersion): Buffer[] {
  return withinStack(() => encodeList(resource, page, metadata));
}

function encodeList(resource: ResourceInfo, page: ListPage, metadata?: MetadataVersion): Buffer[] {
  const type = typeOf(resource);
  if (page.shardInfo !== undefined) throw new CannotEncode('unknown-field', 'ListMeta.shardInfo');
  const meta: Record<string, unknown> = { resourceVersion: page.resourceVersion };
  if (page.continue !== undefined) meta.continue = page.continue;
  if (page.remainingItemCount !== undefined) meta.remainingItemCount = page.remainingItemCount;
  const apiVersion = metadata === undefined ? resource.apiVersion : `meta.k8s.io/${metadata}`;
  const kind = metadata === undefined ? `${resource.kind}List` : 'PartialObjectMetadataList';
  const { entries, items } = page;
  if (metadata === 'v1beta1') {
    // v1beta1's PartialObjectMetadataList numbers its fields the other way round (items 1,
    // metadata 2): the kept item fields, renumbered (`listAnswerChunks`).
    const fields = new Array<Buffer>(items.length);
    for (let i = 0; i < items.length; i++) {
      const b = items[i]!;
      fields[i] = listItem(entries?.[i], type, metadata, () => b.utf8Slice(0, b.length), true);
    }
    return listAnswerChunks(apiVersion, kind, meta, fields, true);
  }
  if (entries) {
    const fields = new Array<Buffer>(items.length);
    for (let i = 0; i < items.length; i++) {
      const b = items[i]!;
      fields[i] = listItem(entries[i], type, metadata, () => b.utf8Slice(0, b.length), true);
    }
    return listAnswerChunks(apiVersion, kind, meta, fields);
  }
  return metadata === undefined
    ? [listAnswer(apiVersion, kind, meta, type, items)]
    : [listAnswer(apiVersion, kind, meta, PARTIAL, items, partialOf)];
}

/** Event lines shared by watchers (the history's) → their frames: encoded once per event. */
const frames = new WeakMap<object, Buffer>();
let watchEncodes = 0;

/**
 * How many watch event lines this process has encoded to protobuf frames: one per (event line,
 * format), however many watchers receive it (a count for tests and profiles, not a metric).
 */
export function protobufWatchEncodes(): number {
  return watchEncodes;
}

/**
 * One watch event's protobuf frame from its JSON line (`{"type":…,"object":…}\n`, one Buffer or
 * its chunks): the object encoded by its own kind (an ERROR's Status, a metadata watch's
 * PartialObjectMetadata, a bookmark's empty object). A line Buffer shared by watchers is
 * encoded once. An initial ADDED line written from a stored object ({@link LINE_SOURCE}) of
 * `watched` (the watch's resource, and the PartialObjectMetadata version of a metadata watch)
 * reuses that object's kept message (LIST, GET and every watcher's initial events share it),
 * or encodes and keeps it. Throws {@link CannotEncode}.
 */
export function protobufWatchFrame(
  line: WireLine,
  watched?: { resource: ResourceInfo; metadata?: MetadataVersion | undefined },
): Buffer {
  const source = watched && !Buffer.isBuffer(line) ? (line as SourcedChunks)[LINE_SOURCE] : undefined;
  if (source) {
    const m = watched!.metadata;
    const item = listItem(source, typeOf(watched!.resource), m, () =>
      Buffer.concat(m === undefined ? source.wire : source.metadataWire(m)).toString('utf8'),
    );
    const { apiVersion, kind } =
      m === undefined ? watched!.resource : { apiVersion: `meta.k8s.io/${m}`, kind: 'PartialObjectMetadata' };
    return watchFrame('ADDED', unknownEnvelope(apiVersion, kind, itemMessage(item)));
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
