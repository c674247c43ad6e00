/**
 * The apiserver's protobuf answers around an object's message bytes
 * (`apimachinery/pkg/runtime/serializer/protobuf/protobuf.go`, `runtime/generated.pb.go`
 * `Unknown`, `apis/meta/v1/generated.pb.go` `WatchEvent`, `runtime/serializer/streaming` +
 * `framer.go` `LengthDelimitedFramer`):
 *
 *   GET / LIST:  `k8s\0` + Unknown{1: TypeMeta{1: apiVersion, 2: kind}, 2: raw, 3: "", 4: ""}
 *                (contentEncoding and contentType are written although empty); a list's raw is
 *                {1: ListMeta, 2: item, 2: item…}, items without TypeMeta (no protobuf field).
 *   WATCH:       4-byte big-endian length + WatchEvent{1: type, 2: RawExtension{1: the object's
 *                GET bytes}}, `Content-Type: application/vnd.kubernetes.protobuf;stream=watch`.
 *
 * Objects are encoded once (`encodeObjectMessage`) and framed from those bytes, so a LIST reuses
 * each item's bytes and a watch event its object's.
 */
import { PROTOBUF_MAGIC } from '../protobuf-meta.ts';
import { CannotEncode, encodeFromText, writeMessage } from './encode-object.ts';
import { kindSpec, messageSpec } from './schema.ts';
import { MIN_SPAN_BYTES, splice } from './spliced.ts';
import { BackwardWriter, LEN } from './writer.ts';

/** The media type of protobuf answers, and of protobuf watch streams. */
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';
export const PROTOBUF_WATCH_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf;stream=watch';

const shared = new BackwardWriter(64 * 1024);
const EMPTY = Buffer.alloc(0);

/**
 * The message bytes (no envelope) of the object of kind `apiVersion`/`kind` whose Go-written
 * JSON is `json`. A copy the caller owns. Throws {@link CannotEncode} when the bytes cannot be
 * exact (the kind has no protobuf form in the table, a field the table does not know, raw JSON),
 * SyntaxError on malformed JSON.
 */
export function encodeObjectMessage(apiVersion: string, kind: string, json: string | Buffer): Buffer {
  const spec = kindSpec(apiVersion, kind);
  if (!spec) throw new CannotEncode('unknown-kind', `${apiVersion}/${kind}`);
  return encodeText(spec.name, typeof json === 'string' ? json : json.toString('utf8'));
}

/**
 * {@link encodeParsed} of Go-written JSON `text` (`pick`: the value to encode from the parsed
 * object, e.g. a PartialObjectMetadata around its metadata); parsed once by plain JSON.parse
 * unless an integer beyond 2^53 needs the exact parse (`encodeFromText`). Throws
 * {@link CannotEncode}, SyntaxError on malformed JSON.
 */
export function encodeText(typeName: string, text: string, pick?: (parsed: unknown) => unknown): Buffer {
  return encodeFromText(text, (o) => encodeParsed(typeName, pick ? pick(o) : o));
}

/** {@link encodeObjectMessage} of an already parsed object, by message type name. */
export function encodeParsed(typeName: string, obj: unknown): Buffer {
  const spec = messageSpec(typeName);
  if (!spec) throw new CannotEncode('unknown-kind', typeName);
  shared.reset();
  try {
    writeMessage(shared, spec, obj as never, spec.name.slice(spec.name.lastIndexOf('.') + 1), true);
    return Buffer.from(shared.view());
  } finally {
    shared.reset();
  }
}

function lenField(num: number, len: number): Buffer {
  const w = new BackwardWriter(16);
  w.uvarint(len);
  w.tag(num, LEN);
  return Buffer.from(w.view());
}

function stringField(num: number, s: string): Buffer {
  const w = new BackwardWriter(64);
  w.string(s);
  w.tag(num, LEN);
  return Buffer.from(w.view());
}

/** `1a 00 22 00`: Unknown's empty contentEncoding and contentType. */
const UNKNOWN_TAIL = Buffer.from([0x1a, 0x00, 0x22, 0x00]);

/**
 * `k8s\0` + runtime.Unknown around `raw` (one buffer, or the chunks of one, e.g. a list's), as
 * chunks to write in order. `apiVersion`/`kind`: the TypeMeta (`v1`, `PodList`).
 */
export function unknownEnvelope(apiVersion: string, kind: string, raw: Buffer | readonly Buffer[]): Buffer[] {
  const chunks = Array.isArray(raw) ? (raw as readonly Buffer[]) : [raw as Buffer];
  let rawLen = 0;
  for (const c of chunks) rawLen += c.length;
  const av = stringField(1, apiVersion);
  const k = stringField(2, kind);
  return [
    PROTOBUF_MAGIC,
    lenField(1, av.length + k.length),
    av,
    k,
    lenField(2, rawLen),
    ...chunks,
    UNKNOWN_TAIL,
  ];
}

/** The whole GET answer of an object's message bytes. */
export function objectAnswer(apiVersion: string, kind: string, message: Buffer): Buffer {
  return Buffer.concat(unknownEnvelope(apiVersion, kind, message));
}

/** `k8s\0` + Unknown's TypeMeta field, per `apiVersion kind` (a handful per process). */
const typeHeads = new Map<string, Buffer>();

/** `k8s\0` + Unknown's TypeMeta field of `apiVersion kind`, built once per pair. */
function typeHead(apiVersion: string, kind: string): Buffer {
  const key = `${apiVersion} ${kind}`;
  let head = typeHeads.get(key);
  if (!head) {
    const [magic, typeLen, av, k] = unknownEnvelope(apiVersion, kind, EMPTY);
    head = Buffer.concat([magic!, typeLen!, av!, k!]);
    typeHeads.set(key, head);
  }
  return head;
}

/**
 * A GET answer of a message `length` bytes long, in one new Buffer with the message's place
 * left for the caller: `[answer, at]`, the message going to `answer[at, at + length)` (the same
 * bytes as {@link objectAnswer}, without building the message on its own first).
 */
export function objectAnswerFrame(
  apiVersion: string,
  kind: string,
  length: number,
): [answer: Buffer, at: number] {
  const head = typeHead(apiVersion, kind);
  // raw's tag (field 2, length-delimited) and its length as a varint, written in place (no
  // writer or Buffer of their own per GET).
  const out = Buffer.allocUnsafe(head.length + 1 + varintLength(length) + length + UNKNOWN_TAIL.length);
  let at = head.copy(out, 0);
  out[at++] = 0x12;
  at = putVarint(out, at, length);
  for (let i = 0; i < UNKNOWN_TAIL.length; i++) out[at + length + i] = UNKNOWN_TAIL[i]!;
  return [out, at];
}

/** Bytes of `v` as a varint. */
function varintLength(v: number): number {
  let n = 1;
  for (; v >= 0x80; v = Math.floor(v / 128)) n++;
  return n;
}

/** Writes `v` as a varint at `out[at]`; returns the offset past it. */
function putVarint(out: Buffer, at: number, v: number): number {
  for (; v >= 0x80; v = Math.floor(v / 128)) out[at++] = (v % 128) | 0x80;
  out[at++] = v;
  return at;
}

/** WatchEvent's type field (`1: type`), per event type (a handful per process). */
const typeFields = new Map<string, Buffer>();

/**
 * A protobuf watch frame of an object whose message is `length` bytes long, in one new Buffer
 * with the message's place left for the caller: `[frame, at]`, the message going to
 * `frame[at, at + length)`. The same bytes as {@link watchFrame} of `type` around
 * {@link unknownEnvelope}`(apiVersion, kind, message)`, without building the message, the
 * envelope's pieces and the frame's each in a Buffer of their own (one allocation per frame,
 * not ~10: a watch-list frames every object once per watcher). `alloc` gives the frame's Buffer
 * (default `Buffer.allocUnsafe`; a pool for frames that die once written, `util/buffer-pool.ts`).
 */
export function watchFrameAround(
  type: string,
  apiVersion: string,
  kind: string,
  length: number,
  alloc: (size: number) => Buffer = Buffer.allocUnsafe,
): [frame: Buffer, at: number] {
  const head = typeHead(apiVersion, kind);
  let t = typeFields.get(type);
  if (!t) {
    t = stringField(1, type);
    if (typeFields.size < 16) typeFields.set(type, t);
  }
  const objLen = head.length + 1 + varintLength(length) + length + UNKNOWN_TAIL.length;
  const innerLen = 1 + varintLength(objLen);
  const extLen = innerLen + objLen;
  const bodyLen = t.length + 1 + varintLength(extLen) + extLen;
  const out = alloc(4 + bodyLen);
  out.writeUInt32BE(bodyLen, 0);
  let at = 4 + t.copy(out, 4);
  out[at++] = 0x12; // WatchEvent 2: RawExtension
  at = putVarint(out, at, extLen);
  out[at++] = 0x0a; // RawExtension 1: raw
  at = putVarint(out, at, objLen);
  at += head.copy(out, at);
  out[at++] = 0x12; // Unknown 2: raw
  at = putVarint(out, at, length);
  for (let i = 0; i < UNKNOWN_TAIL.length; i++) out[at + length + i] = UNKNOWN_TAIL[i]!;
  return [out, at];
}

const LIST_META = 'apimachinery/pkg/apis/meta/v1.ListMeta';

/**
 * A whole LIST answer in one buffer, written backwards (writer.ts) with no copy per item:
 * `k8s\0` + Unknown{1: TypeMeta{apiVersion, kind}, 2: raw {1: ListMeta from `listMeta`, 2: item…},
 * 3: "", 4: ""}. Each of `items` (Go-written JSON) is parsed and encoded as message type
 * `itemType` (`pick`: the value to encode from the parsed item). The buffer starts at ¾ of the
 * items' JSON bytes (a pod's protobuf is ~57% of its JSON) and doubles if that is short. Throws
 * {@link CannotEncode}, SyntaxError on malformed JSON.
 */
export function listAnswer(
  apiVersion: string,
  kind: string,
  listMeta: unknown,
  itemType: string,
  items: readonly Buffer[],
  pick?: (parsed: unknown) => unknown,
): Buffer {
  const spec = messageSpec(itemType);
  if (!spec) throw new CannotEncode('unknown-kind', itemType);
  const metaSpec = messageSpec(LIST_META)!;
  const name = itemType.slice(itemType.lastIndexOf('.') + 1);
  let json = 0;
  for (const b of items) json += b.length;
  const w = new BackwardWriter(Math.max(4096, Math.ceil(json * 0.75)));
  w.raw(UNKNOWN_TAIL);
  const rawEnd = w.written;
  for (let i = items.length - 1; i >= 0; i--) {
    const mark = w.written;
    const b = items[i]!;
    encodeFromText(
      b.utf8Slice(0, b.length),
      (o) => writeMessage(w, spec, (pick ? pick(o) : o) as never, name, true),
      () => w.rewind(mark),
    );
    w.lengthSince(mark);
    w.tag(2, LEN);
  }
  const metaEnd = w.written;
  writeMessage(w, metaSpec, (listMeta ?? {}) as never, 'ListMeta');
  w.lengthSince(metaEnd);
  w.tag(1, LEN);
  w.lengthSince(rawEnd);
  w.tag(2, LEN);
  const typeEnd = w.written;
  w.string(kind);
  w.tag(2, LEN);
  w.string(apiVersion);
  w.tag(1, LEN);
  w.lengthSince(typeEnd);
  w.tag(1, LEN);
  w.raw(PROTOBUF_MAGIC);
  return w.view();
}

/**
 * An object's message as one item field of a list's raw (`2: message`: tag, length, then the
 * message bytes), encoded from Go-written JSON `text` as message type `itemType` (`pick`: the
 * value to encode from the parsed object), in the kept form of spliced.ts: with `json` (the
 * object's stored JSON) every string of at least `MIN_SPAN_BYTES` whose bytes occur in `json` is
 * left out and read from `json` when written (`copyKept`, `keptMessage`), and runs of the rest
 * found in the first such message of `itemType` are read from the process's dictionary of them
 * (`dictionary` false: none, neither added nor searched); without `json`, no spans. A
 * LIST then copies kept items as they are (around {@link listAnswerFrame}), a GET or watch event
 * reads the message inside ({@link itemMessage} of `keptMessage`). Returns a view of a scratch
 * buffer, valid until the next call: the caller copies it. Throws {@link CannotEncode},
 * SyntaxError on malformed JSON.
 */
export function keepListItem(
  itemType: string,
  text: string,
  json: Buffer | undefined,
  pick?: (parsed: unknown) => unknown,
  dictionary = true,
): Buffer {
  const spec = messageSpec(itemType);
  if (!spec) throw new CannotEncode('unknown-kind', itemType);
  const name = itemType.slice(itemType.lastIndexOf('.') + 1);
  shared.reset();
  try {
    if (json) shared.recordStrings(MIN_SPAN_BYTES);
    encodeFromText(
      text,
      (o) => writeMessage(shared, spec, (pick ? pick(o) : o) as never, name, true),
      () => shared.rewind(0),
    );
    shared.lengthSince(0);
    shared.tag(2, LEN);
    return json
      ? splice(shared.view(), shared.stringSpans(), json, dictionary ? itemType : undefined)
      : splice(shared.view(), [], EMPTY);
  } finally {
    shared.reset();
  }
}

/** The message inside a whole list item field (`keptMessage` of {@link keepListItem}'s): a view past its tag and length. */
export function itemMessage(item: Buffer): Buffer {
  let i = 1;
  while (item[i]! & 0x80) i++;
  return item.subarray(i + 1);
}

/** The tag byte of field 1, length-delimited (`0a`): a kept item field's tag (`12`) renumbered. */
const FIELD_1_TAG = Buffer.from([0x0a]);

/**
 * The bytes of a LIST answer around its items' fields (each `2: message`, {@link keepListItem}),
 * `itemBytes` long in all: `[head, tail]`, head = `k8s\0` + Unknown{1: TypeMeta{apiVersion,
 * kind}, 2: raw's tag and length, raw's {1: ListMeta from `listMeta`}}, tail = Unknown's `3: "",
 * 4: ""`. Head, the items in order and tail are the same bytes as {@link listAnswer}.
 */
export function listAnswerFrame(
  apiVersion: string,
  kind: string,
  listMeta: unknown,
  itemBytes: number,
): [head: Buffer, tail: Buffer] {
  const meta = encodeParsed(LIST_META, listMeta ?? {});
  const metaField = Buffer.concat([lenField(1, meta.length), meta]);
  const chunks = unknownEnvelope(apiVersion, kind, [metaField]);
  // unknownEnvelope's head is magic, TypeMeta's field, raw's tag and length (of the ListMeta
  // field alone: written again for the whole raw), then the ListMeta field and the tail.
  const rawLen = lenField(2, metaField.length + itemBytes);
  return [Buffer.concat([chunks[0]!, chunks[1]!, chunks[2]!, chunks[3]!, rawLen, metaField]), UNKNOWN_TAIL];
}

/**
 * A `meta.k8s.io/v1beta1` PartialObjectMetadataList answer as chunks to write in order, from its
 * items' kept fields (each `2: message`, {@link keepListItem}): its fields are numbered the other
 * way round (`apis/meta/v1beta1/generated.proto`: items 1, metadata 2), so gogo writes
 * `k8s\0` + Unknown{1: TypeMeta, 2: raw {1: item…, 2: ListMeta}, 3: "", 4: ""}: each item's tag
 * byte is written as field 1's (the rest of it as it is), the ListMeta last. The apiserver
 * v1.37.2 answers it so (side by side on the fixture); the v1 numbering there would make a client
 * read the ListMeta as an item.
 */
export function listAnswerItemsFirst(
  apiVersion: string,
  kind: string,
  listMeta: unknown,
  items: readonly Buffer[],
): Buffer[] {
  const meta = encodeParsed(LIST_META, listMeta ?? {});
  const raw: Buffer[] = [];
  for (const item of items) raw.push(FIELD_1_TAG, item.subarray(1));
  raw.push(lenField(2, meta.length), meta);
  const chunks = unknownEnvelope(apiVersion, kind, raw);
  // unknownEnvelope's head (magic, TypeMeta, raw's tag and length) is 5 small buffers: one.
  const head = Buffer.concat(chunks.slice(0, 5));
  chunks.splice(0, 5, head);
  return chunks;
}

/**
 * A list's raw chunks: {1: ListMeta from `listMeta` (the JSON list's `metadata`: resourceVersion,
 * continue, remainingItemCount)} then {2: item} per item message.
 */
export function listRaw(listMeta: unknown, items: readonly Buffer[]): Buffer[] {
  const meta = encodeParsed('apimachinery/pkg/apis/meta/v1.ListMeta', listMeta ?? {});
  const out: Buffer[] = [lenField(1, meta.length), meta];
  for (const item of items) out.push(lenField(2, item.length), item);
  return out;
}

/**
 * One protobuf watch frame: 4-byte big-endian length + WatchEvent{1: type, 2: RawExtension{1:
 * object}}, `object` being the event object's whole GET answer (`k8s\0` + Unknown…).
 */
export function watchFrame(type: string, object: Buffer | readonly Buffer[]): Buffer {
  const chunks = Array.isArray(object) ? (object as readonly Buffer[]) : [object as Buffer];
  let objLen = 0;
  for (const c of chunks) objLen += c.length;
  const t = stringField(1, type);
  const inner = lenField(1, objLen);
  const ext = lenField(2, inner.length + objLen);
  const bodyLen = t.length + ext.length + inner.length + objLen;
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(bodyLen, 0);
  return Buffer.concat([head, t, ext, inner, ...chunks]);
}
