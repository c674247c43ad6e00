/**
 * PartialObjectMetadata answers built from the stored bytes (issue 15): the apiserver's
 * `endpoints/handlers/response.go` `asPartialObjectMetadata` / `asPartialObjectMetadataList`
 * wrap each object's ObjectMeta as `{"kind":"PartialObjectMetadata","apiVersion":
 * "meta.k8s.io/<v>","metadata":{…}}` (list items keep that TypeMeta too). The `metadata` value is
 * cut out of the object's bytes (`apimachinery/json-span.ts`), never re-encoded: for built-in
 * kinds it is byte for byte what the apiserver writes (the same typed ObjectMeta encoding); for
 * custom resources (unstructured, keys sorted) the apiserver re-encodes a typed ObjectMeta, so
 * the answer is JSON-equal, its keys in sorted order.
 */
import type { MetadataVersion } from '../apimachinery/accept.ts';
import { topLevelValueSpan } from '../apimachinery/json-span.ts';
import type { ItemsBody, ListItems } from '../apimachinery/list-items.ts';
import { eventLine, type WatchEventType } from '../apimachinery/watch-event.ts';

const HEADS: Record<MetadataVersion, Buffer> = {
  v1: Buffer.from('{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":'),
  v1beta1: Buffer.from('{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1beta1","metadata":'),
};
/** Closes the PartialObjectMetadata object. */
export const OBJECT_END = Buffer.from('}');
/** Closes it as a GET answer (Go `json.Encoder.Encode` ends with a newline). */
export const GET_END = Buffer.from('}\n');
const EMPTY_META = Buffer.from('{}');

/** `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/<v>","metadata":` (one Buffer per version). */
export function metadataHead(version: MetadataVersion): Buffer {
  return HEADS[version];
}

/**
 * The `[start, end)` span of the top-level `metadata` value of an object's JSON bytes; `[0, 0]`
 * when there is none (not seen: every stored object has one), which answers as `{}`.
 */
export function metadataSpan(bytes: Uint8Array): readonly [number, number] {
  return topLevelValueSpan(bytes, 'metadata') ?? [0, 0];
}

/** The `metadata` value of `bytes` (a view, no copy; `{}` when absent). */
export function metadataOf(bytes: Buffer): Buffer {
  const [start, end] = metadataSpan(bytes);
  return end > start ? bytes.subarray(start, end) : EMPTY_META;
}

/** The PartialObjectMetadata object around a `metadata` value, as chunks to write in order. */
export function metadataObject(version: MetadataVersion, metadata: Buffer): Buffer[] {
  return [HEADS[version], metadata, OBJECT_END];
}

/**
 * A watch event line whose object is the PartialObjectMetadata of `object` (whole object bytes,
 * one Buffer): one owned Buffer, built once and shared by every metadata watcher.
 */
export function metadataLine(type: WatchEventType, version: MetadataVersion, object: Buffer): Buffer {
  return eventLine(type, metadataObject(version, metadataOf(object)));
}

/**
 * The PartialObjectMetadataList body: `{"kind":"PartialObjectMetadataList",
 * "apiVersion":"meta.k8s.io/<v>","metadata":{"resourceVersion":N[,"continue":…]
 * [,"remainingItemCount":…]},"items":[…]}\n` (typed ListMeta order, for built-in and custom
 * resources alike; `"items":null` when there is none, as the apiserver's nil slice). `r.items`
 * are the items' `metadata` values, each written wrapped as a PartialObjectMetadata from where it
 * is stored (`ItemsBody`).
 */
export function encodeMetadataList(
  version: MetadataVersion,
  r: { resourceVersion: string; items: ListItems; continue?: string; remainingItemCount?: number },
): ItemsBody {
  const rv = JSON.stringify(r.resourceVersion);
  const cont = r.continue ? `,"continue":${JSON.stringify(r.continue)}` : '';
  const remaining = r.remainingItemCount !== undefined ? `,"remainingItemCount":${r.remainingItemCount}` : '';
  const head0 = `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/${version}","metadata":{"resourceVersion":${rv}${cont}${remaining}},"items":`;
  // `asPartialObjectMetadataList` appends to a nil slice: no item is `"items":null` (v1.37.2,
  // side by side; `[]` before).
  if (r.items.length === 0)
    return { head: Buffer.from(`${head0}null}\n`), items: r.items, open: EMPTY, close: EMPTY, tail: EMPTY };
  const head = Buffer.from(`${head0}[`);
  return { head, items: r.items, open: HEADS[version], close: OBJECT_END, tail: LIST_END };
}

const LIST_END = Buffer.from(']}\n');
const EMPTY = Buffer.alloc(0);
