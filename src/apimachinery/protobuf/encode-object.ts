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

import { hasUnsafeNumber, type Json, jsoniterJSON, LONG_DIGITS, LOSSY } from './exact-json.ts';
import { parseTime, timeNanos } from './go-time.ts';

export { encodeFromText, jsoniterJSON, LossyNumber, parseGoJSON } from './exact-json.ts';

import { type FieldKind, type MessageSpec, messageSpec } from './schema.ts';
import { type BackwardWriter, FIXED32, FIXED64, LEN, VARINT } from './writer.ts';

/** The reasons {@link CannotEncode} names. */
export type DeclineReason =
  | 'unknown-field'
  | 'raw-json'
  | 'json-type'
  | 'fields-escaping'
  | 'unknown-kind'
  | 'too-deep';

/**
 * Why an object cannot be written exactly; `reason` is a short metric-safe word. The path of the
 * value is built only when one is thrown: each enclosing field prepends its name on the way out
 * ({@link within}), so the encoder builds no path strings while it succeeds.
 */
export class CannotEncode extends Error {
  readonly reason: DeclineReason;
  #detail: string;
  constructor(reason: DeclineReason, detail: string) {
    super(`cannot encode exactly in protobuf (${reason}): ${detail}`);
    this.reason = reason;
    this.#detail = detail;
    this.name = 'CannotEncode';
  }

  /** Prefixes the path with an enclosing field (`.name`) or map key (`[key]`). */
  within(segment: string): this {
    const d = this.#detail;
    this.#detail = d.startsWith(':') || d.startsWith('[') ? `${segment}${d}` : `${segment}.${d}`;
    this.message = `cannot encode exactly in protobuf (${this.reason}): ${this.#detail}`;
    return this;
  }
}

type JsonObject = { [k: string]: Json };

const TIME = 'apimachinery/pkg/apis/meta/v1.Time';
const MICRO_TIME = 'apimachinery/pkg/apis/meta/v1.MicroTime';
const QUANTITY = 'apimachinery/pkg/api/resource.Quantity';
const INT_OR_STRING = 'apimachinery/pkg/util/intstr.IntOrString';
const FIELDS_V1 = 'apimachinery/pkg/apis/meta/v1.FieldsV1';
const RAW_EXTENSION = 'apimachinery/pkg/runtime.RawExtension';
/** Go's zero time, 0001-01-01T00:00:00Z, in Unix seconds: `IsZero()` → an empty message. */
const ZERO_TIME_SECONDS = -62135596800;

// Compiled plans: the schema's message types with every name resolved to its plan and every
// kind to a small integer once, so the hot loop does no Map lookups, string compares or closures.

const K_STRING = 0;
const K_BOOL = 1;
const K_INT = 2;
const K_DOUBLE = 3;
const K_FLOAT = 4;
const K_BYTES = 5;
const K_MESSAGE = 6;
const K_MAP = 7;
const K_OTHER = 8;

const C_NONE = 0;
const C_TIME = 1;
const C_MICRO_TIME = 2;
const C_QUANTITY = 3;
const C_INT_OR_STRING = 4;
const C_FIELDS_V1 = 5;
const C_RAW_EXTENSION = 6;
const C_OTHER = 7;

const KIND_CODES: Readonly<Record<FieldKind, number>> = {
  string: K_STRING,
  bool: K_BOOL,
  int32: K_INT,
  int64: K_INT,
  uint32: K_INT,
  uint64: K_INT,
  double: K_DOUBLE,
  float: K_FLOAT,
  bytes: K_BYTES,
  message: K_MESSAGE,
  map: K_MAP,
};
const kindCode = (k: FieldKind): number => KIND_CODES[k] ?? K_OTHER;

const CUSTOM_CODES: Readonly<Record<string, number>> = {
  [TIME]: C_TIME,
  [MICRO_TIME]: C_MICRO_TIME,
  [QUANTITY]: C_QUANTITY,
  [INT_OR_STRING]: C_INT_OR_STRING,
  [FIELDS_V1]: C_FIELDS_V1,
  [RAW_EXTENSION]: C_RAW_EXTENSION,
};
const customCode = (spec: MessageSpec): number =>
  spec.custom ? (CUSTOM_CODES[spec.name] ?? C_OTHER) : C_NONE;

/** One field's plan. */
interface FieldPlan {
  num: number;
  json: string;
  /** K_*; for a map, its value's kind is {@link valueKind}. */
  kind: number;
  ptr: boolean;
  rep: boolean;
  /** An inline embedded struct's plan (its fields read from the parent's object). */
  inline: Plan | undefined;
  /** For K_MESSAGE: the type's plan (undefined: not in the table, a decline when written). */
  elem: Plan | undefined;
  elemName: string;
  valueKind: number;
  valueElem: Plan | undefined;
  valueElemName: string;
  valueNilable: boolean;
}

/** One message type's plan. */
interface Plan {
  name: string;
  /** C_* (C_NONE: a plain message). */
  custom: number;
  keys: ReadonlySet<string>;
  fields: FieldPlan[];
}

const plans = new Map<string, Plan>();

/** The plan of message type `name`, compiled once (cycles resolve through the map). */
function planOf(name: string): Plan | undefined {
  const have = plans.get(name);
  if (have) return have;
  const spec = messageSpec(name);
  if (!spec) return undefined;
  const plan: Plan = { name, custom: customCode(spec), keys: spec.keys, fields: [] };
  plans.set(name, plan);
  plan.fields = spec.fields.map(
    (f): FieldPlan => ({
      num: f.num,
      json: f.json,
      kind: kindCode(f.kind),
      ptr: f.ptr,
      rep: f.rep,
      inline: f.inline ? planOf(f.elem) : undefined,
      elem: f.kind === 'message' ? planOf(f.elem) : undefined,
      elemName: f.elem,
      valueKind: f.kind === 'map' ? kindCode(f.valueKind) : K_OTHER,
      valueElem: f.kind === 'map' && f.valueKind === 'message' ? planOf(f.valueElem) : undefined,
      valueElemName: f.valueElem,
      valueNilable: f.valueNilable,
    }),
  );
  return plan;
}

/**
 * Writes the message `spec` from the JSON object `obj` (null/undefined: the zero value) into
 * `w`, backwards (see writer.ts): the caller writes the length and tag after. `topLevel`
 * allows `kind` and `apiVersion` (TypeMeta has no protobuf field). Throws {@link CannotEncode},
 * its path starting at `path`.
 */
export function writeMessage(
  w: BackwardWriter,
  spec: MessageSpec,
  obj: Json | undefined,
  path: string,
  topLevel = false,
): void {
  const plan = planOf(spec.name);
  try {
    if (!plan) throw new CannotEncode('unknown-kind', `: type ${spec.name}`);
    writePlan(w, plan, obj, topLevel);
  } catch (err) {
    if (err instanceof CannotEncode) err.within(path);
    throw err;
  }
}

function writePlan(w: BackwardWriter, plan: Plan, obj: Json | undefined, topLevel: boolean): void {
  if (plan.custom !== C_NONE) {
    writeCustom(w, plan, obj);
    return;
  }
  if (obj !== null && obj !== undefined) {
    if (typeof obj !== 'object' || Array.isArray(obj)) throw new CannotEncode('json-type', ': not an object');
    const keys = plan.keys;
    for (const k in obj) {
      if (keys.has(k)) continue;
      if (topLevel && (k === 'kind' || k === 'apiVersion')) continue;
      throw new CannotEncode('unknown-field', k);
    }
  }
  writeFields(w, plan, (obj ?? undefined) as JsonObject | undefined);
}

/** The fields of `plan` read from `o` (keys already checked by the caller). */
function writeFields(w: BackwardWriter, plan: Plan, o: JsonObject | undefined): void {
  const fields = plan.fields;
  let i = fields.length - 1;
  try {
    for (; i >= 0; i--) {
      const f = fields[i]!;
      const inline = f.inline;
      if (inline !== undefined) {
        if (inline.custom !== C_NONE) throw new CannotEncode('unknown-kind', `: inline ${inline.name}`);
        const mark = w.written;
        writeFields(w, inline, o);
        w.lengthSince(mark);
        w.tag(f.num, LEN);
        continue;
      }
      const v = o === undefined ? undefined : o[f.json];
      if (f.kind === K_MAP) {
        if (v !== undefined && v !== null) writeMap(w, f, v);
      } else if (f.rep) {
        if (v === undefined || v === null) continue;
        if (!Array.isArray(v)) throw new CannotEncode('json-type', ': not an array');
        for (let j = v.length - 1; j >= 0; j--) writeValue(w, f.num, f.kind, f.elem, f.elemName, v[j]);
      } else if (v === undefined || v === null) {
        if (!f.ptr && f.kind !== K_BYTES) writeValue(w, f.num, f.kind, f.elem, f.elemName, undefined);
      } else writeValue(w, f.num, f.kind, f.elem, f.elemName, v);
    }
  } catch (err) {
    const f = fields[i];
    if (err instanceof CannotEncode && f && f.inline === undefined) err.within(f.json);
    throw err;
  }
}

/** One field: tag + value; `v` undefined = the Go zero value. */
function writeValue(
  w: BackwardWriter,
  num: number,
  kind: number,
  elem: Plan | undefined,
  elemName: string,
  v: Json | undefined,
): void {
  switch (kind) {
    case K_STRING:
      if (v === undefined) w.string('');
      else if (typeof v === 'string') w.string(v);
      else throw new CannotEncode('json-type', ': not a string');
      w.tag(num, LEN);
      return;
    case K_BOOL:
      if (v !== undefined && typeof v !== 'boolean') throw new CannotEncode('json-type', ': not a bool');
      w.uvarint(v === true ? 1 : 0);
      w.tag(num, VARINT);
      return;
    case K_INT:
      if (v === undefined) w.uvarint(0);
      else if (typeof v === 'number' && Number.isInteger(v)) {
        if (!Number.isSafeInteger(v)) throw LOSSY;
        w.varint64(v);
      } else if (typeof v === 'bigint') w.varint64(v);
      else throw new CannotEncode('json-type', ': not an integer');
      w.tag(num, VARINT);
      return;
    case K_DOUBLE:
      if (v !== undefined && typeof v !== 'number') throw new CannotEncode('json-type', ': not a number');
      w.double(v ?? 0);
      w.tag(num, FIXED64);
      return;
    case K_FLOAT:
      if (v !== undefined && typeof v !== 'number') throw new CannotEncode('json-type', ': not a number');
      w.float(v ?? 0);
      w.tag(num, FIXED32);
      return;
    case K_BYTES: {
      if (typeof v !== 'string') throw new CannotEncode('json-type', ': not base64');
      const b = Buffer.from(v, 'base64');
      w.raw(b);
      w.uvarint(b.length);
      w.tag(num, LEN);
      return;
    }
    case K_MESSAGE: {
      if (!elem) throw new CannotEncode('unknown-kind', `: type ${elemName}`);
      const mark = w.written;
      writePlan(w, elem, v, false);
      w.lengthSince(mark);
      w.tag(num, LEN);
      return;
    }
    default:
      throw new CannotEncode('json-type', ': kind not supported');
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

function writeMap(w: BackwardWriter, f: FieldPlan, v: Json): void {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new CannotEncode('json-type', ': not an object');
  const keys = Object.keys(v);
  if (keys.length === 0) return;
  // Go-written JSON has its map keys sorted already (encoding/json sorts them): sort only if not.
  for (let i = 1; i < keys.length; i++) {
    if (goStringLess(keys[i - 1]!, keys[i]!) > 0) {
      keys.sort(goStringLess);
      break;
    }
  }
  const valueKind = f.valueKind;
  const nilable = f.valueNilable;
  for (let i = keys.length - 1; i >= 0; i--) {
    const k = keys[i]!;
    const val = v[k];
    const mark = w.written;
    if (!(nilable && (val === null || val === undefined))) {
      try {
        writeValue(w, 2, valueKind, f.valueElem, f.valueElemName, val ?? undefined);
      } catch (err) {
        if (err instanceof CannotEncode) err.within(`[${k}]`);
        throw err;
      }
    }
    w.string(k);
    w.tag(1, LEN);
    w.lengthSince(mark);
    w.tag(f.num, LEN);
  }
}

/** The types with their own JSON form (schema.ts `custom`): the ones known, or a decline. */
function writeCustom(w: BackwardWriter, plan: Plan, v: Json | undefined): void {
  switch (plan.custom) {
    case C_TIME:
    case C_MICRO_TIME: {
      if (v === undefined || v === null) return;
      if (typeof v !== 'string') throw new CannotEncode('json-type', ': not a time');
      const seconds = parseTime(v);
      if (Number.isNaN(seconds)) throw new CannotEncode('json-type', `: time ${JSON.stringify(v)}`);
      const nanos = timeNanos();
      if (seconds === ZERO_TIME_SECONDS && nanos === 0) return;
      w.uvarint(plan.custom === C_TIME ? 0 : nanos);
      w.tag(2, VARINT);
      w.varint64(seconds);
      w.tag(1, VARINT);
      return;
    }
    case C_QUANTITY:
      if (v !== undefined && v !== null && typeof v !== 'string')
        throw new CannotEncode('json-type', ': not a quantity');
      w.string(v ?? '0');
      w.tag(1, LEN);
      return;
    case C_INT_OR_STRING: {
      const isString = typeof v === 'string';
      if (v !== undefined && v !== null && !isString && !(typeof v === 'number' && Number.isInteger(v)))
        throw new CannotEncode('json-type', ': not an int or string');
      if (typeof v === 'number' && !Number.isSafeInteger(v)) throw LOSSY;
      w.string(isString ? v : '');
      w.tag(3, LEN);
      w.varint64(typeof v === 'number' ? v : 0);
      w.tag(2, VARINT);
      w.uvarint(isString ? 1 : 0);
      w.tag(1, VARINT);
      return;
    }
    case C_FIELDS_V1: {
      if (v === undefined || v === null) return;
      const text = jsoniterJSON(v);
      if (LONG_DIGITS.test(text) && hasUnsafeNumber(v)) throw LOSSY; // JSON.parse rounded it
      if (typeof v === 'object' && INDEX_KEY.test(text))
        throw new CannotEncode('fields-escaping', ': an array-index key');
      w.string(text);
      w.tag(1, LEN);
      return;
    }
    case C_RAW_EXTENSION:
      // Absent or null: Raw is nil, an empty message. Present: raw JSON bytes not recoverable.
      if (v === undefined || v === null) return;
      throw new CannotEncode('raw-json', `: ${plan.name}`);
    default:
      throw new CannotEncode('raw-json', `: ${plan.name}`);
  }
}

/**
 * An object key JS would reorder (an array index), found in the compact JSON of a FieldsV1: the
 * raw JSON's key order is lost. A `"` right after `{` or `,` opens a key (inside a string every
 * `"` follows a backslash), and a key of digits has no escapes.
 */
const INDEX_KEY = /[{,]"(?:0|[1-9]\d*)":/;
