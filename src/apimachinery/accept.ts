/**
 * Does the client accept the plain JSON the cache serves? Mirrors the apiserver's output
 * negotiation: `goautoneg.ParseAccept` (github.com/munnerz/goautoneg: clauses split on `,` and
 * `;`, case-sensitive names, a range without `/` dropped, `q` parsed as a Go float, sorted by its
 * `Less`) and `apiserver/pkg/endpoints/handlers/negotiation/negotiate.go`
 * (`NegotiateMediaTypeOptions`, `acceptMediaTypeOptions`: the first clause, in that order, that
 * a serializer accepts; `as`/`g`/`v` ask for a conversion, `stream` other than `watch` and
 * unknown conversions drop the clause). The clause the apiserver would pick must ask for no
 * conversion (`as=Table`, `as=PartialObjectMetadata[List]`) and no `pretty=1`, and some clause
 * must allow plain JSON, which the cache then answers (issue 13: protobuf-first clients).
 */

interface Clause {
  type: string;
  subtype: string;
  q: number;
  params: Map<string, string>;
}

/** The apiserver's serializers, in its order; `stream`: it has a stream serializer. */
const SERIALIZERS = [
  { type: 'application', subtype: 'json', stream: true },
  { type: 'application', subtype: 'yaml', stream: false },
  { type: 'application', subtype: 'vnd.kubernetes.protobuf', stream: true },
  { type: 'application', subtype: 'cbor', stream: true },
] as const;

type Serializer = (typeof SERIALIZERS)[number];

/** Go `strconv.ParseFloat` for what clients send (decimal); anything else is its error: 0. */
function goParseFloat(s: string): number {
  return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s) ? Number(s) : 0;
}

/** goautoneg `accept_slice.Less` (not a strict order: copied as is). */
function less(a: Clause, b: Clause): boolean {
  if (a.q > b.q) return true;
  if (a.type !== '*' && b.type === '*') return true;
  if (a.subtype !== '*' && b.subtype === '*') return true;
  return false;
}

function parseAccept(header: string): Clause[] {
  const out: Clause[] = [];
  for (const raw of header.split(',')) {
    const [range = '', ...ps] = raw.trim().split(';');
    const sp = range.split('/');
    const type = sp[0]!.trim();
    // goautoneg keeps a bare `*`, but the apiserver answers it 406 (checked on v1.37.2): dropped.
    if (sp.length !== 2) continue;
    const subtype = sp[1]!.trim();
    const params = new Map<string, string>();
    let q = 1;
    for (const p of ps) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim();
      if (k === 'q') q = goParseFloat(p.slice(eq + 1));
      else params.set(k, p.slice(eq + 1).trim());
    }
    out.push({ type, subtype, q, params });
  }
  // Go's sort.Sort is an insertion sort up to 12 elements; beyond, a stable sort is close enough.
  if (out.length > 12) return out.sort((a, b) => (less(a, b) ? -1 : less(b, a) ? 1 : 0));
  for (let i = 1; i < out.length; i++) {
    for (let j = i; j > 0 && less(out[j]!, out[j - 1]!); j--) {
      [out[j], out[j - 1]] = [out[j - 1]!, out[j]!];
    }
  }
  return out;
}

/** `NegotiateMediaTypeOptions`' match of a clause and a serializer. */
function matches(c: Clause, s: Serializer): boolean {
  return (
    (c.type === s.type && (c.subtype === s.subtype || c.subtype === '*')) ||
    (c.type === '*' && c.subtype === '*')
  );
}

/**
 * `acceptMediaTypeOptions` + `RequestScope.AllowsMediaTypeTransform`/`AllowsStreamSchema`:
 * whether the apiserver takes the clause for this serializer, and whether it then converts.
 */
function options(c: Clause, s: Serializer): { convert: boolean } | undefined {
  const stream = c.params.get('stream');
  if (stream !== undefined && stream !== '' && (!s.stream || stream !== 'watch')) return undefined;
  if (!c.params.has('as') && !c.params.has('g') && !c.params.has('v')) return { convert: false };
  const gv = `${c.params.get('g') ?? ''}/${c.params.get('v') ?? ''}`;
  if (gv !== 'meta.k8s.io/v1' && gv !== 'meta.k8s.io/v1beta1') return undefined;
  const kind = c.params.get('as');
  if (kind === 'Table') return s.subtype === 'json' || s.subtype === 'yaml' ? { convert: true } : undefined;
  if (kind === 'PartialObjectMetadata' || kind === 'PartialObjectMetadataList') return { convert: true };
  return undefined;
}

/**
 * True when the cache may answer `accept` with its plain JSON (`Content-Type: application/json`):
 * the clause and serializer the apiserver would pick ask for no conversion (Table,
 * PartialObjectMetadata[List]: the cache cannot build those) and no `pretty=1` (indented JSON),
 * and some clause with q > 0 takes the JSON serializer without either. So protobuf-first clients
 * (client-go `ContentType: protobuf` sends `application/vnd.kubernetes.protobuf, *\/*`; with
 * `AcceptContentTypes` `application/vnd.kubernetes.protobuf,application/json`) get JSON from the
 * cache: client-go picks its decoder from the answer's Content-Type (`rest/request.go`
 * `transformResponse`, `newStreamWatcher` for watches), not from what it asked first.
 * Protobuf-only, CBOR-only or YAML-only Accepts, any conversion, and Accepts the apiserver
 * answers 406 (`application`, `*\/json`, `application/json;v=v1`, `…;stream=x`) go upstream.
 * An absent or empty header means JSON.
 */
export function acceptsPlainJson(accept: string | undefined): boolean {
  if (!accept || accept.trim() === '') return true;
  const clauses = parseAccept(accept);
  let chosen: { c: Clause; convert: boolean } | undefined;
  for (const c of clauses) {
    for (const s of SERIALIZERS) {
      if (!matches(c, s)) continue;
      const o = options(c, s);
      if (o) {
        chosen = { c, convert: o.convert };
        break;
      }
    }
    if (chosen) break;
  }
  // None the apiserver serves: its 406 Not Acceptable, worded by it.
  if (!chosen || chosen.convert || chosen.c.params.get('pretty') === '1') return false;
  const json = SERIALIZERS[0];
  return clauses.some((c) => {
    if (c.q <= 0 || !matches(c, json) || c.params.get('pretty') === '1') return false;
    const o = options(c, json);
    return o !== undefined && !o.convert;
  });
}
