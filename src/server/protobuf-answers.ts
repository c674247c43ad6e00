/**
 * Protobuf answers from the cache (issue 32): which encoding a cache read answers in, and the
 * protobuf LIST, GET and watch-event bytes built from the cached JSON with the generated schema
 * table (`apimachinery/protobuf/`), byte for byte the apiserver's (test/e2e/protobuf-encode.test.ts).
 * The apiserver answers protobuf when the Accept clause it picks takes its protobuf serializer
 * (`negotiate.go`); so does the cache with `--protobuf-answers=cache` (opt-in; with `json`, the
 * default, such a client gets the JSON it also accepts, or the upstream's answer). Whatever the encoder cannot write exactly
 * (`CannotEncode`: raw JSON, a field the table does not know, a kind without a protobuf form)
 * goes upstream as `protobuf-inexact` before anything is written; a watch event it cannot
 * encode ends that watch (the client re-watches, its relist goes upstream).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { cacheForm, type MetadataVersion, protobufForm } from '../apimachinery/accept.ts';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { CannotEncode, encodeFromText } from '../apimachinery/protobuf/encode-object.ts';
import {
  encodeParsed,
  encodeText,
  listAnswer,
  objectAnswer,
  PROTOBUF_CONTENT_TYPE,
  unknownEnvelope,
  watchFrame,
} from '../apimachinery/protobuf/envelope.ts';
import { kindSpec, mayHoldRawJSON } from '../apimachinery/protobuf/schema.ts';
import type { ListPage } from './cache-api.ts';

/** How a cache read is answered: its encoding, and the PartialObjectMetadata version asked for, if any. */
export interface AnswerEncoding {
  encoding: 'json' | 'protobuf';
  metadata?: MetadataVersion;
}

/**
 * The encoding of a cache answer to `headers`' Accept: protobuf when the apiserver would answer
 * protobuf, `protobuf` (`--protobuf-answers=cache`) is on and the kind has a protobuf form; else
 * the JSON form the client accepts; else the reason to go upstream: `protobuf-off` when only
 * protobuf would do and protobuf answers are off, `media-type` for a kind without protobuf
 * (custom resources: the apiserver negotiates among JSON, YAML and CBOR only).
 */
export function answerEncoding(
  headers: IncomingHttpHeaders,
  protobuf: boolean,
  resource: ResourceInfo,
): AnswerEncoding | 'protobuf-off' | 'media-type' {
  const accept = Array.isArray(headers.accept) ? headers.accept.join(',') : headers.accept;
  const hasPb = hasProtobuf(resource);
  const pb = protobuf && hasPb ? protobufForm(accept) : undefined;
  const form = pb ?? cacheForm(accept);
  if (!form) return hasPb ? 'protobuf-off' : 'media-type';
  const encoding = pb ? 'protobuf' : 'json';
  return form.form === 'metadata' ? { encoding, metadata: form.version } : { encoding };
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
 * A GET answer: `json` is the object's whole JSON (with kind and apiVersion). With `metadata`,
 * its PartialObjectMetadata in `meta.k8s.io/<metadata>`. Throws {@link CannotEncode}.
 */
export function protobufGet(
  resource: ResourceInfo,
  json: readonly Buffer[],
  metadata?: MetadataVersion,
): Buffer {
  return withinStack(() => encodeGet(resource, json, metadata));
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

function encodeGet(resource: ResourceInfo, json: readonly Buffer[], metadata?: MetadataVersion): Buffer {
  const text = (json.length === 1 ? json[0]! : Buffer.concat(json)).toString('utf8');
  if (metadata !== undefined) {
    typeOf(resource); // a kind the apiserver has no protobuf for answers 406 in any form
    const partial = encodeText(PARTIAL, text, (o) => ({ metadata: (o as { metadata?: unknown }).metadata }));
    return objectAnswer(`meta.k8s.io/${metadata}`, 'PartialObjectMetadata', partial);
  }
  return objectAnswer(resource.apiVersion, resource.kind, encodeText(typeOf(resource), text));
}

/** A PartialObjectMetadata around a list item's `metadata` value. */
const partialOf = (metadata: unknown) => ({ metadata });

/**
 * A LIST answer (one buffer, in a one-element array of chunks) from a cache page (`items`: list
 * items, or with `metadata` the objects' `metadata` values). Throws {@link CannotEncode}.
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
  return [
    metadata === undefined
      ? listAnswer(resource.apiVersion, `${resource.kind}List`, meta, type, page.items)
      : listAnswer(
          `meta.k8s.io/${metadata}`,
          'PartialObjectMetadataList',
          meta,
          PARTIAL,
          page.items,
          partialOf,
        ),
  ];
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
 * encoded once. Throws {@link CannotEncode}.
 */
export function protobufWatchFrame(line: Buffer | readonly Buffer[]): Buffer {
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
