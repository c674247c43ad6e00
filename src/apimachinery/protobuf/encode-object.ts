/**
 * A cached object's JSON → the protobuf bytes of its Go type, as the generated marshalers
 * (`generated.pb.go` `MarshalToSizedBuffer`) write them, driven by the schema table
 * (`schema.ts`). The rules, read in k8s.io/api and apimachinery v0.37.2:
 *
 * - fields in field-number order; a Go value field (scalar or struct) is written even when zero
 *   (JSON's omitempty hid it: an absent key is the zero value), a pointer only when set, a
 *   slice's elements each with the field's tag (none when empty), a `[]byte` only when non-nil;
 * - map entries `{1: key, 2: value}` with keys in Go `sort.Strings` order (UTF-8 bytes, not JS's
 *   UTF-16 order), a map value always written unless it is a nil pointer or nil `[]byte`;
 * - int32/int64 as the varint of `uint64(v)` (negative: 10 bytes), int64 beyond 2^53 exact
 *   (the JSON is parsed keeping them as bigint);
 * - `metav1.Time` = Timestamp{seconds, nanos 0} (`time_proto.go` `ProtoTime`: nanos are not
 *   kept), the zero time = an empty message; `metav1.MicroTime` keeps microseconds in nanos;
 *   `resource.Quantity` = {1: its canonical string} (the JSON string, `quantity_proto.go`);
 *   `intstr.IntOrString` = {1: type, 2: intVal, 3: strVal}, all three written;
 *   `metav1.FieldsV1` = {1: the raw JSON} (the compact JSON the apiserver keeps).
 *
 * Whatever cannot be written exactly throws {@link CannotEncode} with a reason (the caller sends
 * the request upstream): a key the table does not know (the apiserver keeps no unknown field, so
 * the table is older or newer than the object), a value of the wrong JSON type, raw-JSON types
 * (`runtime.RawExtension`, apiextensions `JSON`…: their bytes are not recoverable from parsed
 * JSON), FieldsV1 content whose escaping may differ, a custom type the encoder does not know.
 */
import { type FieldKind, type FieldSpec, type MessageSpec, messageSpec } from './schema.ts';
import { type BackwardWriter, FIXED32, FIXED64, LEN, VARINT } from './writer.ts';

/** The reasons {@link CannotEncode} names. */
export type DeclineReason = 'unknown-field' | 'raw-json' | 'json-type' | 'fields-escaping' | 'unknown-kind';

/** Why an object cannot be written exactly; `reason` is a short metric-safe word. */
export class CannotEncode extends Error {
  readonly reason: DeclineReason;
  constructor(reason: DeclineReason, detail: string) {
    super(`cannot encode exactly in protobuf (${reason}): ${detail}`);
    this.reason = reason;
    this.name = 'CannotEncode';
  }
}

type Json = null | boolean | number | bigint | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

/** A JSON number of 16 or more digits may lie beyond 2^53. */
const LONG_NUMBER = /\d{16}/;

/**
 * Parses Go-written JSON, keeping integers beyond 2^53 exact as bigint (JSON.parse source
 * access, ES2025). Throws SyntaxError on malformed JSON.
 */
export function parseGoJSON(text: string): Json {
  if (!LONG_NUMBER.test(text)) return JSON.parse(text) as Json;
  const revive = (_k: string, v: unknown, ctx?: { source?: string }) =>
    typeof v === 'number' && !Number.isSafeInteger(v) && ctx?.source && /^-?\d+$/.test(ctx.source)
      ? BigInt(ctx.source)
      : v;
  return JSON.parse(text, revive as (k: string, v: unknown) => unknown) as Json;
}

const TIME = 'apimachinery/pkg/apis/meta/v1.Time';
const MICRO_TIME = 'apimachinery/pkg/apis/meta/v1.MicroTime';
const QUANTITY = 'apimachinery/pkg/api/resource.Quantity';
const INT_OR_STRING = 'apimachinery/pkg/util/intstr.IntOrString';
const FIELDS_V1 = 'apimachinery/pkg/apis/meta/v1.FieldsV1';
const RAW_EXTENSION = 'apimachinery/pkg/runtime.RawExtension';
/** Go's zero time, 0001-01-01T00:00:00Z, in Unix seconds: `IsZero()` → an empty message. */
const ZERO_TIME_SECONDS = -62135596800;

/**
 * Writes the message `spec` from the JSON object `obj` (null/undefined: the zero value) into
 * `w`, backwards (see writer.ts): the caller writes the length and tag after. `topLevel`
 * allows `kind` and `apiVersion` (TypeMeta has no protobuf field). Throws {@link CannotEncode}.
 */
export function writeMessage(
  w: BackwardWriter,
  spec: MessageSpec,
  obj: Json | undefined,
  path: string,
  topLevel = false,
): void {
  if (spec.custom) {
    writeCustom(w, spec, obj, path);
    return;
  }
  if (obj !== null && obj !== undefined) {
    if (typeof obj !== 'object' || Array.isArray(obj) || typeof obj === 'bigint')
      throw new CannotEncode('json-type', `${path}: not an object`);
    for (const k in obj) {
      if (spec.keys.has(k)) continue;
      if (topLevel && (k === 'kind' || k === 'apiVersion')) continue;
      throw new CannotEncode('unknown-field', `${path}.${k}`);
    }
  }
  writeFields(w, spec, (obj ?? undefined) as JsonObject | undefined, path);
}

/** The fields of `spec` read from `o` (keys already checked by the caller). */
function writeFields(w: BackwardWriter, spec: MessageSpec, o: JsonObject | undefined, path: string): void {
  const fields = spec.fields;
  for (let i = fields.length - 1; i >= 0; i--) {
    const f = fields[i]!;
    if (f.inline) {
      const sub = messageSpec(f.elem);
      if (!sub || sub.custom) throw new CannotEncode('unknown-kind', `${path}: inline ${f.elem}`);
      const mark = w.written;
      writeFields(w, sub, o, path);
      w.lengthSince(mark);
      w.tag(f.num, LEN);
      continue;
    }
    const v = o?.[f.json];
    if (f.kind === 'map') writeMap(w, f, v, `${path}.${f.json}`);
    else if (f.rep) {
      if (v === undefined || v === null) continue;
      if (!Array.isArray(v)) throw new CannotEncode('json-type', `${path}.${f.json}: not an array`);
      for (let j = v.length - 1; j >= 0; j--) writeValue(w, f.num, f.kind, f.elem, v[j], `${path}.${f.json}`);
    } else if (v === undefined || v === null) {
      if (!f.ptr && f.kind !== 'bytes') writeValue(w, f.num, f.kind, f.elem, undefined, `${path}.${f.json}`);
    } else writeValue(w, f.num, f.kind, f.elem, v, `${path}.${f.json}`);
  }
}

/** One field: tag + value; `v` undefined = the Go zero value. */
function writeValue(
  w: BackwardWriter,
  num: number,
  kind: FieldKind,
  elem: string,
  v: Json | undefined,
  path: string,
): void {
  switch (kind) {
    case 'string':
      if (v === undefined) w.string('');
      else if (typeof v === 'string') w.string(v);
      else throw new CannotEncode('json-type', `${path}: not a string`);
      w.tag(num, LEN);
      return;
    case 'bool':
      if (v !== undefined && typeof v !== 'boolean')
        throw new CannotEncode('json-type', `${path}: not a bool`);
      w.uvarint(v === true ? 1 : 0);
      w.tag(num, VARINT);
      return;
    case 'int32':
    case 'int64':
    case 'uint32':
    case 'uint64':
      if (v === undefined) w.uvarint(0);
      else if (typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) w.varint64(v);
      else throw new CannotEncode('json-type', `${path}: not an integer`);
      w.tag(num, VARINT);
      return;
    case 'double':
    case 'float':
      if (v !== undefined && typeof v !== 'number')
        throw new CannotEncode('json-type', `${path}: not a number`);
      if (kind === 'double') w.double(v ?? 0);
      else w.float(v ?? 0);
      w.tag(num, kind === 'double' ? FIXED64 : FIXED32);
      return;
    case 'bytes': {
      if (typeof v !== 'string') throw new CannotEncode('json-type', `${path}: not base64`);
      const b = Buffer.from(v, 'base64');
      w.raw(b);
      w.uvarint(b.length);
      w.tag(num, LEN);
      return;
    }
    case 'message': {
      const spec = messageSpec(elem);
      if (!spec) throw new CannotEncode('unknown-kind', `${path}: type ${elem}`);
      const mark = w.written;
      writeMessage(w, spec, v, path);
      w.lengthSince(mark);
      w.tag(num, LEN);
      return;
    }
    default:
      throw new CannotEncode('json-type', `${path}: kind ${kind}`);
  }
}

/** Go `sort.Strings` order: UTF-8 byte order (differs from UTF-16 order for astral characters). */
function goStringLess(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

function writeMap(w: BackwardWriter, f: FieldSpec, v: Json | undefined, path: string): void {
  if (v === undefined || v === null) return;
  if (typeof v !== 'object' || Array.isArray(v) || typeof v === 'bigint')
    throw new CannotEncode('json-type', `${path}: not an object`);
  const keys = Object.keys(v);
  if (keys.length === 0) return;
  keys.sort(goStringLess);
  for (let i = keys.length - 1; i >= 0; i--) {
    const k = keys[i]!;
    const val = v[k];
    const mark = w.written;
    if (!(f.valueNilable && (val === null || val === undefined)))
      writeValue(w, 2, f.valueKind, f.valueElem, val ?? undefined, `${path}[${k}]`);
    w.string(k);
    w.tag(1, LEN);
    w.lengthSince(mark);
    w.tag(f.num, LEN);
  }
}

/** The types with their own JSON form (schema.ts `custom`): the ones known, or a decline. */
function writeCustom(w: BackwardWriter, spec: MessageSpec, v: Json | undefined, path: string): void {
  switch (spec.name) {
    case TIME:
    case MICRO_TIME: {
      if (v === undefined || v === null) return;
      if (typeof v !== 'string') throw new CannotEncode('json-type', `${path}: not a time`);
      const t = parseTime(v, path);
      if (t.seconds === ZERO_TIME_SECONDS && t.nanos === 0) return;
      w.uvarint(spec.name === TIME ? 0 : t.nanos);
      w.tag(2, VARINT);
      w.varint64(t.seconds);
      w.tag(1, VARINT);
      return;
    }
    case QUANTITY:
      if (v !== undefined && v !== null && typeof v !== 'string')
        throw new CannotEncode('json-type', `${path}: not a quantity`);
      w.string(v ?? '0');
      w.tag(1, LEN);
      return;
    case INT_OR_STRING: {
      const isString = typeof v === 'string';
      if (v !== undefined && v !== null && !isString && !(typeof v === 'number' && Number.isInteger(v)))
        throw new CannotEncode('json-type', `${path}: not an int or string`);
      w.string(isString ? v : '');
      w.tag(3, LEN);
      w.varint64(typeof v === 'number' ? v : 0);
      w.tag(2, VARINT);
      w.uvarint(isString ? 1 : 0);
      w.tag(1, VARINT);
      return;
    }
    case FIELDS_V1: {
      if (v === undefined || v === null) return;
      if (hasIndexKey(v)) throw new CannotEncode('fields-escaping', path);
      w.string(jsoniterJSON(v));
      w.tag(1, LEN);
      return;
    }
    case RAW_EXTENSION:
      // Absent or null: Raw is nil, an empty message. Present: raw JSON bytes not recoverable.
      if (v === undefined || v === null) return;
      throw new CannotEncode('raw-json', `${path}: ${spec.name}`);
    default:
      throw new CannotEncode('raw-json', `${path}: ${spec.name}`);
  }
}

/**
 * The compact JSON structured-merge-diff writes for a FieldsV1 (`fieldpath/serialize.go`:
 * json-iterator's `Stream.WriteObjectField`/`WriteString`, `stream_str.go`
 * `writeStringSlowPath`, which escapes no HTML): JS's `JSON.stringify` but for `\u0008` and
 * `\u000c` where JS writes `\b` and `\f` (json-iterator shortens only `\n`, `\r`, `\t`).
 */
export function jsoniterJSON(v: unknown): string {
  return JSON.stringify(v).replace(/\\(.)/g, (m, esc: string) =>
    esc === 'b' ? '\\u0008' : esc === 'f' ? '\\u000c' : m,
  );
}

/** An object key JS would reorder (an array index): the raw JSON's key order is lost. */
function hasIndexKey(v: Json): boolean {
  if (typeof v !== 'object' || v === null || typeof v === 'bigint') return false;
  if (Array.isArray(v)) return v.some(hasIndexKey);
  for (const k in v) if (/^(0|[1-9]\d*)$/.test(k) || hasIndexKey(v[k]!)) return true;
  return false;
}

/** RFC 3339 (as Go's Time/MicroTime JSON writes it) → Unix seconds and nanoseconds. */
function parseTime(s: string, path: string): { seconds: number; nanos: number } {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(s);
  if (!m) throw new CannotEncode('json-type', `${path}: time ${JSON.stringify(s)}`);
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  // Date.UTC maps years 0–99 to 1900–1999.
  const d = new Date(ms);
  if (Number(m[1]) < 100) d.setUTCFullYear(Number(m[1]));
  let seconds = d.getTime() / 1000;
  if (m[8] !== 'Z') {
    const sign = m[8]![0] === '-' ? -1 : 1;
    seconds -= sign * (Number(m[8]!.slice(1, 3)) * 3600 + Number(m[8]!.slice(4, 6)) * 60);
  }
  const nanos = m[7] ? Number(m[7].padEnd(9, '0')) : 0;
  return { seconds, nanos };
}
