/**
 * The protobuf schema table of the built-in kinds (`schema.json`, generated from the Go types of
 * k8s.io/api, apimachinery, apiextensions-apiserver and kube-aggregator by
 * `test/apiserver/protoschema`; regenerate with `go run ./protoschema > …/schema.json` in
 * test/apiserver/), compiled on first use into {@link MessageSpec}s the encoder walks.
 *
 * Per message type the table lists its fields in field-number order, as the generated Go
 * marshalers (`generated.pb.go`, `MarshalToSizedBuffer`) write them, with the Go shape the
 * `.proto` files do not carry: pointer (written only when set) or value (always written, zero
 * included), repeated, map (keys sorted as Go `sort.Strings`), JSON-inline embedded struct, and
 * the types that marshal JSON their own way (metav1.Time, MicroTime, FieldsV1,
 * resource.Quantity, intstr.IntOrString, runtime.RawExtension, apiextensions JSON…).
 */
import table from './schema.json' with { type: 'json' };

/** A field's wire kind; `message` fields name their type in {@link FieldSpec.elem}. */
export type FieldKind =
  | 'string'
  | 'bytes'
  | 'bool'
  | 'int32'
  | 'int64'
  | 'uint32'
  | 'uint64'
  | 'double'
  | 'float'
  | 'message'
  | 'map';

/** One field of a message type. */
export interface FieldSpec {
  /** The protobuf field number. */
  readonly num: number;
  /** Its JSON name ("" for an inline embedded struct). */
  readonly json: string;
  readonly kind: FieldKind;
  /** A Go pointer: written only when set (JSON present and not null). */
  readonly ptr: boolean;
  /** A Go slice: each element written with the field's tag, none for an absent/empty one. */
  readonly rep: boolean;
  /** The Go struct is embedded with `json:",inline"`: its fields sit in the parent's JSON object. */
  readonly inline: boolean;
  /** For `message`: the type's name. */
  readonly elem: string;
  /** For `map`: the value's kind and message type, and whether a nil value is skipped (pointer, []byte). */
  readonly valueKind: FieldKind;
  readonly valueElem: string;
  readonly valueNilable: boolean;
}

/** One message type: its fields, ascending by number, and the JSON keys its object may carry. */
export interface MessageSpec {
  readonly name: string;
  readonly fields: readonly FieldSpec[];
  /** The type marshals JSON its own way (see the module docstring); the encoder decides. */
  readonly custom: boolean;
  /**
   * JSON keys of this type's object, inline embedded structs' included, and the keys of fields
   * without a protobuf form (an embedded object's TypeMeta: `kind`, `apiVersion`), not written.
   */
  readonly keys: ReadonlySet<string>;
}

interface Table {
  modules: Record<string, string>;
  kinds: Record<string, string>;
  custom: Record<string, boolean>;
  jsonOnly: Record<string, string[]>;
  types: Record<string, (string | number)[][]>;
}

const TABLE = table as unknown as Table;

/** The module versions the table was generated from (`k8s.io/api` → `v0.37.2`…). */
export const SCHEMA_MODULES: Readonly<Record<string, string>> = TABLE.modules;

/** The Kubernetes minor version the table describes, `1.37` (from `k8s.io/api` `v0.37.x`). */
export const SCHEMA_MINOR = `1.${/^v0\.(\d+)\./.exec(TABLE.modules['k8s.io/api'] ?? '')?.[1] ?? '?'}`;

/**
 * Whether the table describes the apiserver whose `/version` `gitVersion` is `gitVersion`
 * (`v1.37.2`, `v1.37.2-gke.1`, …): the same major.minor as {@link SCHEMA_MINOR}. A newer minor
 * may add fields (declined one by one, but only as they appear) and change which are pointers,
 * which the bytes depend on; an older one may lack fields the table writes as zero values.
 * False for a version that does not parse or is not known yet (undefined).
 */
export function schemaMatches(gitVersion: string | undefined): boolean {
  const m = gitVersion === undefined ? null : /^v?(\d+)\.(\d+)(?:\D|$)/.exec(gitVersion);
  return m !== null && `${Number(m[1])}.${Number(m[2])}` === SCHEMA_MINOR;
}

const compiled = new Map<string, MessageSpec>();

/**
 * The compiled message type `name` (e.g. `api/core/v1.Pod`); undefined when the table does not
 * know it.
 */
export function messageSpec(name: string): MessageSpec | undefined {
  const have = compiled.get(name);
  if (have) return have;
  const rows = TABLE.types[name];
  if (!rows) return undefined;
  const fields = rows.map((r): FieldSpec => {
    const flags = String(r[3]);
    return {
      num: Number(r[0]),
      json: String(r[1]),
      kind: String(r[2]) as FieldKind,
      ptr: flags.includes('p'),
      rep: flags.includes('r'),
      inline: flags.includes('i'),
      elem: String(r[4] ?? ''),
      valueKind: String(r[5] ?? '') as FieldKind,
      valueElem: String(r[6] ?? ''),
      valueNilable: flags.includes('n'),
    };
  });
  const keys = new Set<string>(TABLE.jsonOnly[name] ?? []);
  const spec: MessageSpec = { name, fields, custom: TABLE.custom[name] === true, keys };
  compiled.set(name, spec);
  for (const f of fields) {
    if (!f.inline) keys.add(f.json);
    else for (const k of messageSpec(f.elem)?.keys ?? []) keys.add(k);
  }
  return spec;
}

/**
 * The message type of a kind, keyed `group/version/Kind` (`v1/Pod` for the core group,
 * `meta.k8s.io/v1/PartialObjectMetadataList`); undefined for kinds without a protobuf form
 * (custom resources, kinds the table does not list).
 */
export function kindSpec(apiVersion: string, kind: string): MessageSpec | undefined {
  const name = TABLE.kinds[`${apiVersion}/${kind}`];
  return name === undefined ? undefined : messageSpec(name);
}

/** The custom-JSON types the encoder writes exactly (encode-object.ts `writeCustom`). */
const EXACT_CUSTOM = new Set([
  'apimachinery/pkg/apis/meta/v1.Time',
  'apimachinery/pkg/apis/meta/v1.MicroTime',
  'apimachinery/pkg/api/resource.Quantity',
  'apimachinery/pkg/util/intstr.IntOrString',
  'apimachinery/pkg/apis/meta/v1.FieldsV1',
]);

const rawMemo = new Map<string, boolean>();

/**
 * Whether an object of message type `name` may carry a value the encoder declines (raw JSON:
 * `runtime.RawExtension`, apiextensions `JSON` and `JSONSchemaPropsOr*`…), anywhere below it:
 * a watch of such a kind is not served in protobuf (an event declined mid-stream would end it).
 */
export function mayHoldRawJSON(name: string): boolean {
  const have = rawMemo.get(name);
  if (have !== undefined) return have;
  rawMemo.set(name, false); // cycles (JSONSchemaProps) resolve through the other fields
  const spec = messageSpec(name);
  let raw = spec === undefined || (spec.custom && !EXACT_CUSTOM.has(name));
  if (spec && !spec.custom) {
    for (const f of spec.fields) {
      const elem = f.kind === 'map' ? f.valueElem : f.elem;
      if (elem !== '' && mayHoldRawJSON(elem)) raw = true;
    }
  }
  rawMemo.set(name, raw);
  return raw;
}
