/**
 * Which JSON answer may the cache serve a client (plain, or PartialObjectMetadata)? Mirrors the apiserver's output
 * negotiation: `goautoneg.ParseAccept` (github.com/munnerz/goautoneg: clauses split on `,` and
 * `;`, case-sensitive names, a range without `/` dropped, `q` parsed as a Go float, sorted by its
 * `Less`) and `apiserver/pkg/endpoints/handlers/negotiation/negotiate.go`
 * (`NegotiateMediaTypeOptions`, `acceptMediaTypeOptions`: the first clause, in that order, that
 * a serializer accepts; `as`/`g`/`v` ask for a conversion, `stream` other than `watch` and
 * unknown conversions drop the clause). The clause the apiserver would pick must ask for no
 * conversion, or for PartialObjectMetadata(List) (issue 15) (its `pretty=1` indents the JSON
 * answer, {@link acceptAsksPretty}); some clause must allow the JSON form of that answer, which the cache then sends (issue 13:
 * protobuf-first clients). `as=Table` picked for the JSON serializer is the cache's Table form
 * (printed as the apiserver prints, when the resource has a ported printer); the apiserver
 * offers Table in JSON and YAML only (`AllowsMediaTypeTransform`), so a protobuf Table clause is
 * skipped as it skips it, and a protobuf-only Table Accept is its 406, passed upstream.
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

/** The last header {@link parseAccept} parsed, and its clauses: a request's Accept is read 2–4 times. */
let lastHeader: string | undefined;
let lastClauses: readonly Clause[] = [];

/**
 * `header`'s clauses in goautoneg's order. The same header as the last call's gives the same
 * (shared, never modified) array: the cache's negotiation reads one request's Accept several
 * times (`delegate.ts`, `protobuf-answers.ts` `answerEncoding`, the parameter check).
 */
function parseAccept(header: string): readonly Clause[] {
  if (header === lastHeader) return lastClauses;
  lastClauses = parseAcceptOnce(header);
  lastHeader = header;
  return lastClauses;
}

/**
 * goautoneg's `strings.Trim(s, " ")`: spaces only. A tab stays part of the type, subtype,
 * parameter name or value (`application/json;pretty=1\t;q=1` is no `pretty=1` to the apiserver,
 * checked on v1.37.2: its answer is compact; `String.prototype.trim` made it indented).
 */
function trimSpaces(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && s.charCodeAt(a) === 32) a++;
  while (b > a && s.charCodeAt(b - 1) === 32) b--;
  return s.slice(a, b);
}

function parseAcceptOnce(header: string): Clause[] {
  const out: Clause[] = [];
  for (const raw of header.split(',')) {
    const [range = '', ...ps] = raw.split(';');
    const sp = range.split('/');
    const type = trimSpaces(sp[0]!);
    // goautoneg keeps a bare `*`, but the apiserver answers it 406 (checked on v1.37.2): dropped.
    if (sp.length !== 2) continue;
    const subtype = trimSpaces(sp[1]!);
    const params = new Map<string, string>();
    let q = 1;
    for (const p of ps) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = trimSpaces(p.slice(0, eq));
      if (k === 'q') q = goParseFloat(p.slice(eq + 1));
      else params.set(k, trimSpaces(p.slice(eq + 1)));
    }
    out.push({ type, subtype, q, params });
  }
  return sortLikeGo(out, less);
}

/**
 * Go's `sort.Sort` as goautoneg calls it, in place: an insertion sort up to 12 elements (the
 * order Go gives even with a non-strict `less`); beyond, V8's stable `Array.prototype.sort`
 * (TimSort: O(n log n) calls of `less`, where an insertion sort of a hostile header of n clauses
 * makes n²/2; Go's pdqsort may order equal clauses differently, which no client depends on).
 * Returns `xs`, sorted in place.
 */
export function sortLikeGo<T>(xs: T[], lessFn: (a: T, b: T) => boolean): T[] {
  if (xs.length > 12) return xs.sort((a, b) => (lessFn(a, b) ? -1 : lessFn(b, a) ? 1 : 0));
  for (let i = 1; i < xs.length; i++) {
    for (let j = i; j > 0 && lessFn(xs[j]!, xs[j - 1]!); j--) {
      [xs[j], xs[j - 1]] = [xs[j - 1]!, xs[j]!];
    }
  }
  return xs;
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

/** The PartialObjectMetadata kinds the cache builds, and their meta.k8s.io versions. */
export type MetadataKind = 'PartialObjectMetadata' | 'PartialObjectMetadataList';
export type MetadataVersion = 'v1' | 'v1beta1';

/**
 * What the cache may answer an `Accept` with: its plain JSON, or the JSON
 * PartialObjectMetadata(List) form in `meta.k8s.io/<version>` (the apiserver's
 * `endpoints/handlers/response.go` `asPartialObjectMetadata[List]`, `Content-Type:
 * application/json` as it sends). Which of them the request's verb may take is the caller's
 * business (the apiserver answers `…List` on a GET, or the single kind on a LIST, 406).
 */
export type CacheForm =
  | { form: 'plain' }
  | { form: 'metadata'; kind: MetadataKind; version: MetadataVersion }
  | { form: 'table'; version: MetadataVersion };

/**
 * The form the cache answers `accept` with, or undefined when it must go upstream. The clause
 * and serializer the apiserver would pick decide: no conversion → plain JSON when some clause
 * with q > 0 takes the JSON serializer without one (issue 13: protobuf-first clients, e.g.
 * client-go `ContentType: protobuf` sends `application/vnd.kubernetes.protobuf, *\/*`);
 * `as=PartialObjectMetadata[List]` → that JSON metadata form when some clause with q > 0 asks
 * the JSON serializer for the same conversion (client-go `k8s.io/client-go/metadata` sends
 * `application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,
 * application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json` for a LIST,
 * `…;as=PartialObjectMetadata;…` for GET and WATCH). client-go picks its decoder from the
 * answer's Content-Type (`rest/request.go` `transformResponse`, `newStreamWatcher` for watches),
 * not from what it asked first. `as=Table;g=meta.k8s.io;v=v1|v1beta1` picked for JSON → the
 * `table` form (kubectl sends `application/json;as=Table;v=v1;g=meta.k8s.io,
 * application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json`). The chosen clause may
 * ask `pretty=1` (the answer is then indented: {@link acceptAsksPretty}); a JSON clause the cache
 * falls back on for a protobuf-first client may not. Protobuf-, CBOR- or YAML-only Accepts and Accepts the apiserver answers 406
 * (`application`, `*\/json`, `application/json;v=v1`, `…;stream=x`) go upstream. An absent or
 * empty header means plain JSON.
 */
export function cacheForm(accept: string | undefined): CacheForm | undefined {
  if (!accept || accept.trim() === '') return PLAIN;
  const clauses = parseAccept(accept);
  const chosen = choose(clauses);
  // None the apiserver serves: its 406 Not Acceptable, worded by it.
  if (!chosen) return undefined;
  // `application/*` picked: the apiserver takes it for custom resources but answers 406 for
  // built-in kinds (v1.37.2, side by side), which the cache cannot tell apart here: upstream.
  if (chosen.c.type !== '*' && chosen.c.subtype === '*') return undefined;
  // CBOR picked: passed upstream, even when a later clause allows JSON (CBOR is alpha; a
  // client asking it first gets the apiserver's own answer).
  if (chosen.s.subtype === 'cbor') return undefined;
  const as = chosen.convert ? chosen.c.params.get('as') : undefined;
  // A Table the apiserver would write as JSON: the cache prints it (YAML goes upstream).
  if (as === 'Table')
    return chosen.s.subtype === 'json'
      ? { form: 'table', version: chosen.c.params.get('v') as MetadataVersion }
      : undefined;
  if (chosen.convert && as !== 'PartialObjectMetadata' && as !== 'PartialObjectMetadataList')
    return undefined;
  const kind = as as MetadataKind | undefined;
  const version = chosen.c.params.get('v') as MetadataVersion;
  const json = SERIALIZERS[0];
  const allowed = clauses.some((c) => {
    // A JSON answer standing in for the apiserver's protobuf one is never indented: a clause
    // asking `pretty=1` is not one it may stand on (the chosen clause is, see acceptAsksPretty).
    if (c.q <= 0 || !matches(c, json) || (c !== chosen.c && c.params.get('pretty') === '1')) return false;
    const o = options(c, json);
    if (o === undefined) return false;
    if (kind === undefined) return !o.convert;
    return o.convert && c.params.get('as') === kind && c.params.get('v') === version;
  });
  if (!allowed) return undefined;
  return kind === undefined ? PLAIN : { form: 'metadata', kind, version };
}

const PLAIN: CacheForm = { form: 'plain' };

/** The clause and serializer `NegotiateMediaTypeOptions` picks: the first clause a serializer takes. */
function choose(clauses: readonly Clause[]): { c: Clause; s: Serializer; convert: boolean } | undefined {
  for (const c of clauses) {
    for (const s of SERIALIZERS) {
      if (!matches(c, s)) continue;
      const o = options(c, s);
      if (o) return { c, s, convert: o.convert };
    }
  }
  return undefined;
}

/**
 * The form of a protobuf answer when the apiserver would answer `accept` in protobuf: the clause
 * it picks ({@link cacheForm}'s choice) takes the protobuf serializer, without conversion
 * (plain) or as PartialObjectMetadata(List) (the apiserver's protobuf metadata answers); a
 * `pretty=1` changes nothing (no pretty protobuf serializer). client-go's protobuf configs (`application/vnd.kubernetes.protobuf, *\/*`, or
 * `…,application/json`) and its metadata client pick protobuf; `as=Table` never does (the
 * apiserver's protobuf serializer drops that clause). Undefined otherwise, and for an absent
 * header (JSON).
 */
export function protobufForm(accept: string | undefined): CacheForm | undefined {
  if (!accept || accept.trim() === '') return undefined;
  const chosen = choose(parseAccept(accept));
  // `pretty=1` changes nothing: the protobuf serializer has no pretty form (`PrettySerializer`).
  if (chosen?.s.subtype !== 'vnd.kubernetes.protobuf') return undefined;
  if (!chosen.convert) return PLAIN;
  const as = chosen.c.params.get('as');
  if (as !== 'PartialObjectMetadata' && as !== 'PartialObjectMetadataList') return undefined;
  return { form: 'metadata', kind: as, version: chosen.c.params.get('v') as MetadataVersion };
}

/**
 * Whether the clause the apiserver picks for `accept` takes its JSON serializer with `pretty=1`
 * (`acceptMediaTypeOptions`: `options.Pretty = v == "1"`): `NegotiateOutputMediaType` then
 * writes with the JSON `PrettySerializer` (indented). A protobuf clause's `pretty=1` changes
 * nothing (no pretty protobuf serializer); an absent header asks no indentation.
 */
export function acceptAsksPretty(accept: string | undefined): boolean {
  if (!accept || accept.trim() === '') return false;
  const chosen = choose(parseAccept(accept));
  return chosen?.s.subtype === 'json' && chosen.c.params.get('pretty') === '1';
}

/**
 * True when the cache may answer `accept` with its plain JSON (`Content-Type: application/json`):
 * {@link cacheForm} is `plain`.
 */
export function acceptsPlainJson(accept: string | undefined): boolean {
  return cacheForm(accept)?.form === 'plain';
}

/**
 * The names of the media-type parameters of every clause of `accept` but `q`, as goautoneg
 * reads them (a clause whose range is not `type/subtype` is dropped with its parameters, a
 * parameter without `=` is ignored). The apiserver's `acceptMediaTypeOptions` knows `as`, `g`,
 * `v`, `stream`, `sv`, `export`, `pretty` and `profile` and ignores the others; a new one it
 * learns would change its answer where the cache would not notice.
 */
export function acceptParameterNames(accept: string | undefined): Set<string> {
  const names = new Set<string>();
  if (!accept) return names;
  for (const c of parseAccept(accept)) {
    for (const k of c.params.keys()) names.add(k);
  }
  return names;
}

/** The serializer the apiserver writes an error `metav1.Status` with, and whether indented. */
export interface StatusMediaType {
  subtype: Serializer['subtype'];
  /** A clause's `pretty=1` (the request's `pretty` query and User-Agent are the caller's). */
  pretty: boolean;
}

/**
 * How the apiserver encodes an error Status for `accept` (`responsewriters.ErrorNegotiated` →
 * `WriteObjectNegotiated` with `negotiation.DefaultEndpointRestrictions`, k8s.io/apiserver
 * v0.37.2): the first clause, in goautoneg's order, that a serializer takes with NO conversion
 * (any `as`, `g` or `v` parameter drops the clause, as does a `stream` other than `watch` or a
 * non-empty `sv`). An absent or empty header is JSON. Undefined when no clause qualifies
 * (e.g. `application/json;as=Table;g=meta.k8s.io;v=v1` alone): the apiserver then answers
 * `WriteRawJSON`, the Status indented by two spaces, `Content-Type: application/json`.
 */
export function statusMediaType(accept: string | undefined): StatusMediaType | undefined {
  if (accept === undefined || accept === '') return { subtype: 'json', pretty: false };
  for (const c of parseAccept(accept)) {
    if (c.params.has('as') || c.params.has('g') || c.params.has('v')) continue;
    if ((c.params.get('sv') ?? '') !== '') continue;
    for (const s of SERIALIZERS) {
      if (!matches(c, s) || options(c, s) === undefined) continue;
      return { subtype: s.subtype, pretty: c.params.get('pretty') === '1' };
    }
  }
  return undefined;
}
