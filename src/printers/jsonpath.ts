/**
 * client-go's JSONPath (k8s.io/client-go v0.37.2 `util/jsonpath`: `jsonpath.go` here, `parser.go` in `jsonpath-parser.ts`,
 * and the comparisons of `third_party/forked/golang/template/funcs.go`), ported for what the
 * CRD Table convertor asks of it: parse `{<column jsonPath>}`, find the results of unstructured
 * JSON data with missing keys allowed, print one result as `PrintResults` does. No JSONPath
 * library evaluates this flavour (its filters' Go typing, its slices' bounds errors, its
 * `<no value>`), so the subset is ported line by line, errors returned as Go returns them.
 *
 * Go values are represented by the decoded JSON ({@link decodeUnstructured}): a Go `int64` is an
 * integral number below 2^63, a bigint beyond 2^53 (the apiserver decodes an integer literal as
 * int64, any other number as float64, and writes integral float64s below 1e21 as integer
 * literals, which it decodes back as int64), a `float64` any other number; a path's float literal is a {@link GoFloat}, a byte of a string a
 * {@link GoUint}. Go map iteration order (wildcards, recursive descent over objects) is random;
 * the port iterates in key order. `range`/`end` are not ported: {@link parseJSONPath} throws
 * {@link JSONPathUnsupported}.
 */
import type { ListNode, Node, Param } from './jsonpath-parser.ts';

export { type JSONPath, JSONPathUnsupported, parseJSONPath } from './jsonpath-parser.ts';

import type { JSONPath } from './jsonpath-parser.ts';

/** A float64 literal of a path (`2.0` is a float in Go, not an int). */
export class GoFloat {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }
}

/** A uint8 (a byte of a string, from a wildcard over it). */
export class GoUint {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }
}

/** A Go value as the evaluation sees it (`null`: a nil interface). */
export type GoValue = unknown;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** The reviver of {@link decodeUnstructured}: an integer literal beyond 2^53 within int64 as a bigint. */
const exactInt64 = (_k: string, v: unknown, ctx?: { source?: string }) => {
  if (typeof v !== 'number' || Number.isSafeInteger(v) || !ctx?.source || !/^-?\d+$/.test(ctx.source))
    return v;
  const n = BigInt(ctx.source);
  return n >= INT64_MIN && n <= INT64_MAX ? n : v;
};

/**
 * An object's JSON as the apiserver's unstructured decoder holds it: integer literals as int64
 * (beyond 2^53 as a bigint, exact; beyond int64 a float64), other numbers as float64. Plain
 * JSON.parse unless the text has 16 digits in a row (the reviver costs a call per value). V8
 * walks a reviver recursively: an object nested deeper than about 2,000 levels is decoded
 * plainly (its integers beyond 2^53 rounded, a known difference) rather than not printed.
 * @throws SyntaxError on malformed JSON.
 */
export function decodeUnstructured(text: string): GoValue {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  try {
    return JSON.parse(text, exactInt64 as (k: string, v: unknown) => unknown);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return JSON.parse(text);
  }
}

type Result = [GoValue[], Error | undefined];

/**
 * `FindResults(data)` with missing keys allowed: one result list per top-level node, or the
 * error Go returns (the CRD convertor prints a nil cell for it).
 */
export function findResults(path: JSONPath, data: GoValue): [GoValue[][], Error | undefined] {
  const cur = [data];
  const full: GoValue[][] = [];
  for (const node of path.root.nodes) {
    const [results, err] = walk(cur, node);
    if (err) return [[], err];
    full.push(results);
  }
  return [full, undefined];
}

function walk(value: GoValue[], node: Node): Result {
  switch (node.t) {
    case 'list':
      return evalList(value, node);
    case 'text':
      return [[node.text], undefined];
    case 'field':
      return evalField(value, node.name);
    case 'array':
      return evalArray(value, node.params);
    case 'filter':
      return evalFilter(value, node);
    case 'int':
      return [value.map(() => node.value), undefined];
    case 'float':
      return [value.map(() => new GoFloat(node.value)), undefined];
    case 'bool':
      return [value.map(() => node.value), undefined];
    case 'wildcard':
      return [value.flatMap(children), undefined];
    case 'recursive':
      return evalRecursive(value);
    case 'union':
      return evalUnion(value, node.nodes);
    case 'identifier':
      return [value, new Error(`unrecognized identifier ${node.name}`)];
  }
}

function evalList(value: GoValue[], node: ListNode): Result {
  let cur = value;
  for (const n of node.nodes) {
    const [next, err] = walk(cur, n);
    if (err) return [next, err];
    cur = next;
  }
  return [cur, undefined];
}

const isMap = (v: GoValue): v is Record<string, GoValue> =>
  v !== null &&
  typeof v === 'object' &&
  !Array.isArray(v) &&
  !(v instanceof GoFloat) &&
  !(v instanceof GoUint);

function evalField(input: GoValue[], name: string): Result {
  const results: GoValue[] = [];
  for (const v of input) {
    if (v === null) continue;
    if (isMap(v) && Object.hasOwn(v, name)) results.push(v[name]);
  }
  return [results, undefined];
}

function evalArray(input: GoValue[], params: Param[]): Result {
  const result: GoValue[] = [];
  for (const v of input) {
    if (v === null) continue;
    if (!Array.isArray(v)) return [input, new Error('not array or slice')];
    const len = v.length;
    let p0 = params[0]!.known ? params[0]!.value : 0;
    if (p0 < 0) p0 += len;
    let p1 = params[1]!.known ? params[1]!.value : len;
    if (p1 < 0 || (p1 === 0 && params[1]!.derived)) p1 += len;
    if (p1 === p0) return [result, undefined];
    if (p0 >= len || p0 < 0) return [input, new Error('array index out of bounds')];
    if (p1 > len || p1 < 0) return [input, new Error('array index out of bounds')];
    if (p0 > p1) return [input, new Error('starting index is greater than ending index')];
    const slice = v.slice(p0, p1);
    let step = 1;
    if (params[2]!.known) {
      if (params[2]!.value <= 0) return [input, new Error('step must be > 0')];
      step = params[2]!.value;
    }
    for (let i = 0; i < slice.length; i += step) result.push(slice[i]);
  }
  return [result, undefined];
}

function evalUnion(input: GoValue[], nodes: ListNode[]): Result {
  const result: GoValue[] = [];
  for (const n of nodes) {
    const [temp, err] = evalList(input, n);
    if (err) return [input, err];
    result.push(...temp);
  }
  return [result, undefined];
}

/** The elements of a map, slice or string (its bytes), as the wildcard walks them. */
function children(v: GoValue): GoValue[] {
  if (v === null) return [];
  if (Array.isArray(v)) return v;
  if (typeof v === 'string') return [...Buffer.from(v, 'utf8')].map((b) => new GoUint(b));
  if (isMap(v)) return Object.values(v);
  return [];
}

/**
 * `evalRecursive`: every value of `input` that has elements, each followed by the same of its
 * elements (depth first, in order). Walked with an explicit stack: a custom resource may nest
 * up to the apiserver's decoding limit (10,000), deeper than JS's call stack.
 */
function evalRecursive(input: GoValue[]): Result {
  const result: GoValue[] = [];
  const stack: { items: GoValue[]; i: number }[] = [{ items: input, i: 0 }];
  while (stack.length > 0) {
    const top = stack.at(-1)!;
    if (top.i >= top.items.length) {
      stack.pop();
      continue;
    }
    const v = top.items[top.i++];
    if (v === null) continue;
    const results = children(v);
    if (results.length !== 0) {
      result.push(v);
      stack.push({ items: results, i: 0 });
    }
  }
  return [result, undefined];
}

function evalFilter(input: GoValue[], node: { left: ListNode; right: ListNode; op: string }): Result {
  const results: GoValue[] = [];
  for (const v of input) {
    if (!Array.isArray(v)) return [input, new Error('not array or slice and cannot be filtered')];
    for (const el of v) {
      const temp = [el];
      const [lefts, lerr] = evalList(temp, node.left);
      if (node.op === 'exists') {
        if (lefts.length > 0) results.push(el);
        continue;
      }
      if (lerr) return [input, lerr];
      if (lefts.length === 0) continue;
      if (lefts.length > 1) return [input, new Error('can only compare one element at a time')];
      const [rights, rerr] = evalList(temp, node.right);
      if (rerr) return [input, rerr];
      if (rights.length === 0) continue;
      if (rights.length > 1) return [input, new Error('can only compare one element at a time')];
      let pass: boolean;
      try {
        pass = compare(node.op, lefts[0], rights[0]);
      } catch (err) {
        return [results, err as Error];
      }
      if (pass) results.push(el);
    }
  }
  return [results, undefined];
}

type Kind = 'bool' | 'int' | 'uint' | 'float' | 'string';

/** `basicKind`; @throws Error for any other (nil, map, slice): `errBadComparisonType`. */
function basicKind(v: GoValue): [Kind, number | bigint | string | boolean] {
  if (typeof v === 'boolean') return ['bool', v];
  if (typeof v === 'string') return ['string', v];
  if (typeof v === 'number') return [isGoInt(v) ? 'int' : 'float', v];
  if (typeof v === 'bigint') return ['int', v];
  if (v instanceof GoFloat) return ['float', v.value];
  if (v instanceof GoUint) return ['uint', v.value];
  throw new Error('invalid type for comparison');
}

/** Whether a decoded JSON number is a Go int64 (see the module's docstring). */
export function isGoInt(n: number): boolean {
  return Number.isInteger(n) && Math.abs(n) < 2 ** 63;
}

/** Go's string order: UTF-8 bytes. */
const strLess = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0;

/** Equal values of one kind; an int64 may be a number or a bigint. */
const same = (a: unknown, b: unknown) =>
  typeof a === 'bigint' || typeof b === 'bigint'
    ? BigInt(a as number | bigint) === BigInt(b as number | bigint)
    : a === b;

function equal(a: GoValue, b: GoValue): boolean {
  const [k1, v1] = basicKind(a);
  const [k2, v2] = basicKind(b);
  if (k1 !== k2) {
    if ((k1 === 'int' && k2 === 'uint') || (k1 === 'uint' && k2 === 'int')) return same(v1, v2);
    throw new Error('incompatible types for comparison');
  }
  return same(v1, v2);
}

function less(a: GoValue, b: GoValue): boolean {
  const [k1, v1] = basicKind(a);
  const [k2, v2] = basicKind(b);
  if (k1 !== k2) {
    if ((k1 === 'int' && k2 === 'uint') || (k1 === 'uint' && k2 === 'int'))
      return (v1 as number | bigint) < (v2 as number | bigint);
    throw new Error('incompatible types for comparison');
  }
  if (k1 === 'bool') throw new Error('invalid type for comparison');
  if (k1 === 'string') return strLess(v1 as string, v2 as string);
  return (v1 as number | bigint) < (v2 as number | bigint);
}

/** The filter operators (`template.Less`, `Equal`, …). @throws Error as Go's comparisons fail. */
function compare(op: string, a: GoValue, b: GoValue): boolean {
  switch (op) {
    case '<':
      return less(a, b);
    case '>':
      return !(less(a, b) || equal(a, b));
    case '==':
      return equal(a, b);
    case '!=':
      return !equal(a, b);
    case '<=':
      return less(a, b) || equal(a, b);
    case '>=':
      return !less(a, b);
    default:
      throw new Error(`unrecognized filter operator ${op}`);
  }
}

/**
 * `PrintResults(w, [reflect.ValueOf(v)])` of one value: a map or slice as `json.Marshal` writes it
 * (keys sorted, HTML-safe escapes), anything else as `fmt.Fprint` (a nil `<no value>`, a float64
 * as `%v`).
 */
export function printResult(v: GoValue): string {
  if (v === null || v === undefined) return '<no value>';
  if (Array.isArray(v) || isMap(v)) return goMarshal(v);
  if (typeof v === 'number') return isGoInt(v) ? String(v) : formatFloatV(v);
  if (typeof v === 'bigint') return String(v);
  if (v instanceof GoFloat) return formatFloatV(v.value);
  if (v instanceof GoUint) return String(v.value);
  return String(v);
}

/** `fmt.Sprint(float64)`: `strconv.FormatFloat(f, 'g', -1, 64)` (exponent when < -4 or ≥ 6). */
export function formatFloatV(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mant, e] = f.toExponential().split('e') as [string, string];
  const exp = Number(e);
  if (exp < -4 || exp >= 6) {
    const abs = Math.abs(exp);
    return `${mant}e${exp < 0 ? '-' : '+'}${abs < 10 ? '0' : ''}${abs}`;
  }
  return String(f);
}

/**
 * `json.Marshal` of unstructured data: map keys in Go's byte order, HTML-safe escapes. Written
 * with an explicit stack (no recursion, no JSON.stringify of the tree): a custom resource may
 * nest up to the apiserver's decoding limit (10,000), deeper than JS's call stack.
 */
function goMarshal(v: GoValue): string {
  const out: string[] = [];
  // Pending work: a value to write, or a literal (a separator or a closing bracket).
  const stack: ({ lit: string } | { v: GoValue })[] = [{ v }];
  while (stack.length > 0) {
    const top = stack.pop()!;
    if ('lit' in top) {
      out.push(top.lit);
      continue;
    }
    const x = top.v;
    if (Array.isArray(x)) {
      out.push('[');
      stack.push({ lit: ']' });
      for (let i = x.length - 1; i >= 0; i--) {
        stack.push({ v: x[i] });
        if (i > 0) stack.push({ lit: ',' });
      }
    } else if (isMap(x)) {
      out.push('{');
      stack.push({ lit: '}' });
      const keys = Object.keys(x).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push({ v: x[keys[i]!] });
        stack.push({ lit: `${i > 0 ? ',' : ''}${goString(keys[i]!)}:` });
      }
    } else if (typeof x === 'string') out.push(goString(x));
    else if (typeof x === 'bigint') out.push(String(x));
    else out.push(JSON.stringify(x) ?? 'null');
  }
  return out.join('');
}

/** A JSON string as Go's encoder writes it (HTML-safe escapes). */
function goString(s: string): string {
  return JSON.stringify(s)
    .replaceAll('<', '\\u003c')
    .replaceAll('>', '\\u003e')
    .replaceAll('&', '\\u0026')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}
