/**
 * The few metadata fields read-your-writes needs from a Kubernetes protobuf answer, read with a
 * small protobuf wire-format reader instead of the generated types (`apimachinery/pkg/runtime/
 * serializer/protobuf/protobuf.go`; field numbers from `apimachinery/pkg/apis/meta/v1/
 * generated.proto`):
 *
 *   `k8s\0` + runtime.Unknown { 1: TypeMeta { 1: apiVersion, 2: kind }, 2: raw }
 *   raw of an object:  { 1: ObjectMeta { 1: name, 3: namespace, 5: uid, 6: resourceVersion } }
 *   raw of a list:     { 1: ListMeta { 2: resourceVersion }, 2: items (repeated objects) }
 *   raw of a Status:   { 2: status, 5: StatusDetails { 1: name, 6: uid } }
 *
 * Truncated input is read as far as it goes (a prefix of a large LIST still yields its RV: the
 * ListMeta comes first). Never throws.
 */

/** What {@link decodeProtobufMeta} read; the shape of the JSON fields of the same names. */
export interface ProtobufMeta {
  kind?: string;
  status?: string;
  metadata?: MetaFields;
  details?: MetaFields;
  items?: { metadata?: MetaFields }[];
}

/** Names, uid and resourceVersion of an ObjectMeta / ListMeta / StatusDetails. */
export interface MetaFields {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
}

/** The 4-byte prefix of every Kubernetes protobuf message. */
export const PROTOBUF_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

interface Field {
  num: number;
  /** Bytes of a length-delimited field (possibly cut short when the input is truncated). */
  bytes?: Buffer;
  /** Whether `bytes` is complete. */
  complete: boolean;
}

/** A varint at `pos`: [value, next position], or undefined when truncated or too long. */
function varint(b: Buffer, pos: number): [number, number] | undefined {
  let v = 0;
  let mul = 1;
  for (let i = pos; i < b.length && i < pos + 10; i++) {
    const byte = b[i]!;
    v += (byte & 0x7f) * mul;
    mul *= 128;
    if ((byte & 0x80) === 0) return [v, i + 1];
  }
  return undefined;
}

/** The fields of one message, in order; stops at the first truncated or malformed one. */
function* fields(b: Buffer): Generator<Field> {
  let pos = 0;
  while (pos < b.length) {
    const tag = varint(b, pos);
    if (!tag) return;
    const [key, p] = tag;
    const num = Math.floor(key / 8);
    const wire = key % 8;
    pos = p;
    if (wire === 0) {
      const v = varint(b, pos);
      if (!v) return;
      pos = v[1];
      yield { num, complete: true };
    } else if (wire === 2) {
      const len = varint(b, pos);
      if (!len) return;
      const start = len[1];
      const end = start + len[0];
      const complete = end <= b.length;
      yield { num, bytes: b.subarray(start, Math.min(end, b.length)), complete };
      if (!complete) return;
      pos = end;
    } else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else return;
  }
}

const str = (f: Field) => (f.complete && f.bytes ? f.bytes.toString('utf8') : undefined);

/** Reads the given string fields (`field number → name`) of a message. */
function meta(b: Buffer, names: Record<number, keyof MetaFields>): MetaFields {
  const m: MetaFields = {};
  for (const f of fields(b)) {
    const name = names[f.num];
    const s = name ? str(f) : undefined;
    if (name && s !== undefined) m[name] = s;
  }
  return m;
}

const OBJECT_META = { 1: 'name', 3: 'namespace', 5: 'uid', 6: 'resourceVersion' } as const;
const LIST_META = { 2: 'resourceVersion' } as const;
const STATUS_DETAILS = { 1: 'name', 6: 'uid' } as const;

/** First field `num` of a message. */
function field(b: Buffer, num: number): Field | undefined {
  for (const f of fields(b)) if (f.num === num) return f;
  return undefined;
}

/**
 * Reads kind, metadata, Status details and list items' metadata from a protobuf answer (or a
 * prefix of one). `complete`: `body` is the whole answer, so a list without items has `items: []`
 * (protobuf writes no field for an empty repeated one; a prefix may just not reach them: then
 * `items` is left out unless one was read). undefined when `body` is not a Kubernetes protobuf
 * message.
 */
export function decodeProtobufMeta(body: Buffer, complete = false): ProtobufMeta | undefined {
  if (body.length < 4 || !body.subarray(0, 4).equals(PROTOBUF_MAGIC)) return undefined;
  const unknown = body.subarray(4);
  const typeMeta = field(unknown, 1);
  const out: ProtobufMeta = {};
  if (typeMeta?.bytes) {
    const kind = field(typeMeta.bytes, 2);
    if (kind) {
      const k = str(kind);
      if (k !== undefined) out.kind = k;
    }
  }
  const raw = field(unknown, 2)?.bytes;
  if (!raw) return out;
  if (out.kind === 'Status') {
    for (const f of fields(raw)) {
      if (f.num === 2) {
        const s = str(f);
        if (s !== undefined) out.status = s;
      } else if (f.num === 5 && f.complete && f.bytes) out.details = meta(f.bytes, STATUS_DETAILS);
    }
    return out;
  }
  const isList = out.kind?.endsWith('List') === true;
  if (isList && complete) out.items = [];
  // meta.k8s.io/v1beta1 PartialObjectMetadataList numbers its fields the other way round
  // (`apis/meta/v1beta1/generated.proto`: items 1, metadata 2).
  const apiVersion = out.kind === 'PartialObjectMetadataList' ? field(typeMeta!.bytes!, 1) : undefined;
  const v1beta1 = apiVersion !== undefined && str(apiVersion) === 'meta.k8s.io/v1beta1';
  const [metaNum, itemNum] = v1beta1 ? [2, 1] : [1, 2];
  for (const f of fields(raw)) {
    if (f.num === metaNum && f.bytes) out.metadata = meta(f.bytes, isList ? LIST_META : OBJECT_META);
    else if (isList && f.num === itemNum && f.complete && f.bytes) {
      const m = field(f.bytes, 1);
      out.items ??= [];
      out.items.push(m?.bytes ? { metadata: meta(m.bytes, OBJECT_META) } : {});
    } else if (!isList) break;
  }
  return out;
}

/**
 * The resourceVersion of the object in one protobuf watch event frame's payload (or a prefix of
 * it): the raw `metav1.WatchEvent` message the stream serializer writes (no `k8s\0` envelope:
 * `{ 1: type, 2: RawExtension { 1: raw } }`, raw being the object's own `k8s\0` message; a
 * BOOKMARK's object carries only its metadata). undefined when it cannot be read (truncated
 * before the RV, malformed, or no RV). Never throws.
 */
export function watchEventResourceVersion(payload: Buffer): string | undefined {
  const object = field(payload, 2)?.bytes;
  const raw = object ? field(object, 1)?.bytes : undefined;
  return raw ? decodeProtobufMeta(raw)?.metadata?.resourceVersion : undefined;
}
