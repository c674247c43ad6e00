/**
 * Does the client accept the plain JSON the cache serves? Mirrors the apiserver's output
 * negotiation (`apiserver/pkg/endpoints/handlers/negotiation/negotiate.go`
 * `NegotiateMediaTypeOptions`, clauses ordered as `goautoneg.ParseAccept`: by q, then
 * specificity, then position): the clause the apiserver would pick must ask for no conversion
 * (`as=Table`, `as=PartialObjectMetadata[List]`), and some clause must allow plain JSON, which the
 * cache then answers (issue 13: protobuf-first clients).
 */

interface Clause {
  type: string;
  subtype: string;
  q: number;
  params: Map<string, string>;
  index: number;
}

const SUPPORTED = new Set([
  'application/json',
  'application/yaml',
  'application/vnd.kubernetes.protobuf',
  'application/cbor',
]);

function parseAccept(header: string): Clause[] {
  const out: Clause[] = [];
  header.split(',').forEach((part, index) => {
    const [mt, ...ps] = part.split(';').map((s) => s.trim());
    if (!mt) return;
    // Case-sensitive, like the apiserver: `Application/JSON` is 406 Not Acceptable there.
    const [type = '', subtype = '*'] = mt.split('/');
    const params = new Map<string, string>();
    let q = 1;
    for (const p of ps) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim().toLowerCase();
      const v = p.slice(eq + 1).trim();
      if (k === 'q') q = Number.parseFloat(v);
      else params.set(k, v);
    }
    out.push({ type, subtype, q: Number.isNaN(q) ? 0 : q, params, index });
  });
  const specificity = (c: Clause) => (c.type === '*' ? 0 : c.subtype === '*' ? 1 : 2);
  return out.sort((a, b) => b.q - a.q || specificity(b) - specificity(a) || a.index - b.index);
}

/** `application/json`, `application/*` or `*\/*` without `as=`: a clause plain JSON satisfies. */
function allowsPlainJson(c: Clause): boolean {
  if (c.q <= 0 || c.params.has('as')) return false;
  return c.type === '*' || (c.type === 'application' && (c.subtype === '*' || c.subtype === 'json'));
}

/**
 * True when the cache may answer `accept` with its plain JSON (`Content-Type: application/json`):
 * the client allows plain JSON in some clause (`application/json`, `application/*`, `*\/*`
 * without `as=`), and the clause the apiserver would pick asks for no `as=` conversion (Table,
 * PartialObjectMetadata[List]: the cache cannot build those). So protobuf-first clients
 * (client-go `ContentType: protobuf` sends `application/vnd.kubernetes.protobuf, *\/*`; with
 * `AcceptContentTypes` `application/vnd.kubernetes.protobuf,application/json`) get JSON from the
 * cache: client-go picks its decoder from the answer's Content-Type (`rest/request.go`
 * `transformResponse`, `newStreamWatcher` for watches), not from what it asked first.
 * Protobuf-only, CBOR-only or YAML-only Accepts and any `as=` conversion go upstream.
 * An absent or empty header means JSON.
 */
export function acceptsPlainJson(accept: string | undefined): boolean {
  if (!accept || accept.trim() === '') return true;
  const clauses = parseAccept(accept);
  const chosen = clauses.find((c) => {
    if (c.q <= 0) return false;
    return (
      c.type === '*' ||
      (c.type === 'application' && c.subtype === '*') ||
      SUPPORTED.has(`${c.type}/${c.subtype}`)
    );
  });
  // None the apiserver serves: its 406 Not Acceptable, worded by it.
  if (!chosen || chosen.params.has('as')) return false;
  return clauses.some(allowsPlainJson);
}
