/**
 * Does the client accept the plain JSON the cache serves? Mirrors the apiserver's output
 * negotiation (`apiserver/pkg/endpoints/handlers/negotiation/negotiate.go`
 * `NegotiateMediaTypeOptions`, clauses ordered as `goautoneg.ParseAccept`: by q, then
 * specificity, then position): the clause the apiserver would pick decides. Only when that
 * clause is JSON (`application/json`, `application/*`, `*\/*`) without a conversion (`as=Table`,
 * `as=PartialObjectMetadata[List]`) can the cache answer identically; anything else goes upstream.
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

/**
 * True when the apiserver would answer `accept` with plain JSON (no `as=` conversion), so the
 * cache's bytes are what the client asked for. An absent or empty header means JSON.
 */
export function acceptsPlainJson(accept: string | undefined): boolean {
  if (!accept || accept.trim() === '') return true;
  for (const c of parseAccept(accept)) {
    if (c.q <= 0) continue;
    const full = `${c.type}/${c.subtype}`;
    const matches = c.type === '*' || (c.type === 'application' && c.subtype === '*') || SUPPORTED.has(full);
    if (!matches) continue;
    const json = c.type === '*' || c.subtype === '*' || full === 'application/json';
    return json && !c.params.has('as');
  }
  return false;
}
