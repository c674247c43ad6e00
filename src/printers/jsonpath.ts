/**
 * client-go's JSONPath (k8s.io/client-go v0.37.2 `util/jsonpath`: `parser.go`, `jsonpath.go`,
 * and the comparisons of `third_party/forked/golang/template/funcs.go`), ported for what the
 * CRD Table convertor asks of it: parse `{<column jsonPath>}`, find the results of unstructured
 * JSON data with missing keys allowed, print one result as `PrintResults` does. No JSONPath
 * library evaluates this flavour (its filters' Go typing, its slices' bounds errors, its
 * `<no value>`), so the subset is ported line by line, errors returned as Go returns them.
 *
 * Go values are represented by the decoded JSON: a Go `int64` is an integral number below 2^63
 * (the apiserver decodes an integer literal as int64, any other number as float64, and writes
 * integral float64s below 1e21 as integer literals, which it decodes back as int64), a `float64`
 * any other number; a path's float literal is a {@link GoFloat}, a byte of a string a
 * {@link GoUint}. Go map iteration order (wildcards, recursive descent over objects) is random;
 * the port iterates in key order. `range`/`end` are not ported: {@link parseJSONPath} throws
 * {@link JSONPathUnsupported}.
 */

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

/** A path the port does not evaluate (`range`/`end`). */
export class JSONPathUnsupported extends Error {}

type Node =
  | { t: 'list'; nodes: Node[] }
  | { t: 'text'; text: string }
  | { t: 'field'; name: string }
  | { t: 'array'; params: Param[] }
  | { t: 'filter'; left: ListNode; right: ListNode; op: string }
  | { t: 'int'; value: number }
  | { t: 'float'; value: number }
  | { t: 'bool'; value: boolean }
  | { t: 'wildcard' }
  | { t: 'recursive' }
  | { t: 'union'; nodes: ListNode[] }
  | { t: 'identifier'; name: string };
type ListNode = { t: 'list'; nodes: Node[] };
interface Param {
  value: number;
  known: boolean;
  derived: boolean;
}

const EOF = -1;
const DICT_KEY = /^'([^']*)'$/;
const SLICE = /^(-?\d*)(:-?\d*)?(:-?\d*)?$/;
const FILTER = /^([^!<>=]+)([!<>=]+)(.+?)$/;
const LETTER_OR_DIGIT = /^[\p{L}\p{Nd}_]$/u;
const DIGIT = /^\p{Nd}$/u;

/** `Parser` (parser.go): text and actions of a template into nodes. */
class Parser {
  readonly root: ListNode = { t: 'list', nodes: [] };
  #input = '';
  #pos = 0;
  #start = 0;
  #width = 0;

  parse(text: string): void {
    this.#input = text;
    this.#pos = 0;
    this.#parseText(this.root);
  }

  #consume(): string {
    const v = this.#input.slice(this.#start, this.#pos);
    this.#start = this.#pos;
    return v;
  }

  #next(): number {
    if (this.#pos >= this.#input.length) {
      this.#width = 0;
      return EOF;
    }
    const c = this.#input.codePointAt(this.#pos)!;
    this.#width = c > 0xffff ? 2 : 1;
    this.#pos += this.#width;
    return c;
  }

  #peek(): number {
    const r = this.#next();
    this.#backup();
    return r;
  }

  #backup(): void {
    this.#pos -= this.#width;
  }

  #parseText(cur: ListNode): void {
    for (;;) {
      if (this.#input.startsWith('{', this.#pos)) {
        if (this.#pos > this.#start) cur.nodes.push({ t: 'text', text: this.#consume() });
        this.#parseLeftDelim(cur);
        return;
      }
      if (this.#next() === EOF) break;
    }
    if (this.#pos > this.#start) cur.nodes.push({ t: 'text', text: this.#consume() });
  }

  #parseLeftDelim(cur: ListNode): void {
    this.#pos += 1;
    this.#consume();
    const n: ListNode = { t: 'list', nodes: [] };
    cur.nodes.push(n);
    this.#parseInsideAction(n);
  }

  #parseInsideAction(cur: ListNode): void {
    for (;;) {
      const rest = this.#input.slice(this.#pos);
      if (rest.startsWith('}')) {
        this.#pos += 1;
        this.#consume();
        this.#parseText(this.root);
        return;
      }
      if (rest.startsWith('[?(')) {
        this.#parseFilter(cur);
        return;
      }
      if (rest.startsWith('..')) {
        this.#parseRecursive(cur);
        return;
      }
      const r = this.#next();
      const ch = r === EOF ? '' : String.fromCodePoint(r);
      if (r === EOF || ch === '\r' || ch === '\n') throw new Error('unclosed action');
      if (ch === ' ' || ch === '@' || ch === '$') {
        this.#consume();
        continue;
      }
      if (ch === '[') {
        this.#parseArray(cur);
        return;
      }
      if (ch === '"' || ch === "'") {
        this.#parseQuote(cur, ch);
        return;
      }
      if (ch === '.') {
        this.#parseField(cur);
        return;
      }
      if (ch === '+' || ch === '-' || DIGIT.test(ch)) {
        this.#backup();
        this.#parseNumber(cur);
        return;
      }
      if (LETTER_OR_DIGIT.test(ch)) {
        this.#backup();
        this.#parseIdentifier(cur);
        return;
      }
      throw new Error(`unrecognized character in action: ${ch}`);
    }
  }

  #parseIdentifier(cur: ListNode): void {
    for (;;) {
      if (isTerminator(this.#next())) {
        this.#backup();
        break;
      }
    }
    const value = this.#consume();
    if (value === 'true' || value === 'false') cur.nodes.push({ t: 'bool', value: value === 'true' });
    else {
      if (value === 'range' || value === 'end') throw new JSONPathUnsupported(`${value} is not ported`);
      cur.nodes.push({ t: 'identifier', name: value });
    }
    this.#parseInsideAction(cur);
  }

  #parseRecursive(cur: ListNode): void {
    if (cur.nodes.at(-1)?.t === 'recursive') throw new Error('invalid multiple recursive descent');
    this.#pos += 2;
    this.#consume();
    cur.nodes.push({ t: 'recursive' });
    const r = this.#peek();
    if (r !== EOF && LETTER_OR_DIGIT.test(String.fromCodePoint(r))) {
      this.#parseField(cur);
      return;
    }
    this.#parseInsideAction(cur);
  }

  #parseNumber(cur: ListNode): void {
    const r = this.#peek();
    if (r === 0x2b || r === 0x2d) this.#next();
    for (;;) {
      const c = this.#next();
      if (c === EOF || (c !== 0x2e && !DIGIT.test(String.fromCodePoint(c)))) {
        this.#backup();
        break;
      }
    }
    const value = this.#consume();
    const i = atoi(value);
    if (i !== undefined) cur.nodes.push({ t: 'int', value: i });
    else if (/^[+-]?(\d+\.?\d*|\.\d+)$/.test(value)) cur.nodes.push({ t: 'float', value: Number(value) });
    else throw new Error(`cannot parse number ${value}`);
    this.#parseInsideAction(cur);
  }

  #parseArray(cur: ListNode): void {
    for (;;) {
      const c = this.#next();
      if (c === EOF || c === 0x0a) throw new Error('unterminated array');
      if (c === 0x5d) break;
    }
    let text = this.#consume();
    text = text.slice(1, -1);
    if (text === '*') text = ':';
    const strs = text.split(',');
    if (strs.length > 1) {
      const union: ListNode[] = [];
      for (const s of strs) union.push(parseAction(`[${s.replace(/^ +| +$/g, '')}]`));
      cur.nodes.push({ t: 'union', nodes: union });
      this.#parseInsideAction(cur);
      return;
    }
    const dict = DICT_KEY.exec(text);
    if (dict) {
      for (const n of parseAction(`.${dict[1]}`).nodes) cur.nodes.push(n);
      this.#parseInsideAction(cur);
      return;
    }
    const m = SLICE.exec(text);
    if (!m) throw new Error(`invalid array index ${text}`);
    const params: Param[] = [];
    for (let i = 0; i < 3; i++) {
      let v = m[i + 1] ?? '';
      const p: Param = { value: 0, known: false, derived: false };
      if (v !== '') {
        if (i > 0) v = v.slice(1);
        if (i > 0 && v === '') p.known = false;
        else {
          const n = atoi(v);
          if (n === undefined) throw new Error(`array index ${v} is not a number`);
          p.known = true;
          p.value = n;
        }
      } else if (i === 1) {
        p.known = true;
        p.value = params[0]!.value + 1;
        p.derived = true;
      }
      params.push(p);
    }
    cur.nodes.push({ t: 'array', params });
    this.#parseInsideAction(cur);
  }

  #parseFilter(cur: ListNode): void {
    this.#pos += 3;
    this.#consume();
    let begin = false;
    let end = false;
    let pair = '';
    for (;;) {
      const c = this.#next();
      if (c === EOF || c === 0x0a) throw new Error('unterminated filter');
      const ch = String.fromCodePoint(c);
      if (ch === '"' || ch === "'") {
        if (!begin) {
          begin = true;
          pair = ch;
          continue;
        }
        if (this.#input[this.#pos - 2] !== '\\' && ch === pair) end = true;
      } else if (ch === ')' && begin === end) break;
    }
    if (this.#next() !== 0x5d) throw new Error('unclosed array expect ]');
    const text = this.#consume().slice(0, -2);
    const m = FILTER.exec(text);
    if (!m)
      cur.nodes.push({ t: 'filter', left: parseAction(text), right: { t: 'list', nodes: [] }, op: 'exists' });
    else cur.nodes.push({ t: 'filter', left: parseAction(m[1]!), right: parseAction(m[3]!), op: m[2]! });
    this.#parseInsideAction(cur);
  }

  #parseQuote(cur: ListNode, end: string): void {
    for (;;) {
      const c = this.#next();
      if (c === EOF || c === 0x0a) throw new Error('unterminated quoted string');
      if (String.fromCodePoint(c) === end && this.#input[this.#pos - 2] !== '\\') break;
    }
    const value = this.#consume();
    cur.nodes.push({ t: 'text', text: unquoteExtend(value) });
    this.#parseInsideAction(cur);
  }

  #parseField(cur: ListNode): void {
    this.#consume();
    for (;;) {
      const r = this.#next();
      if (r === 0x5c) this.#next();
      else if (isTerminator(r)) {
        this.#backup();
        break;
      }
    }
    const value = this.#consume();
    if (value === '*') cur.nodes.push({ t: 'wildcard' });
    else cur.nodes.push({ t: 'field', name: value.replaceAll('\\', '') });
    this.#parseInsideAction(cur);
  }
}

function isTerminator(r: number): boolean {
  if (r === EOF) return true;
  return ' \t\r\n.,[]$@{}'.includes(String.fromCodePoint(r));
}

/** strconv.Atoi: an optional sign and decimal digits, within int64. */
function atoi(s: string): number | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = Number(s);
  return Math.abs(n) < 2 ** 63 ? n : undefined;
}

/** `parseAction`: the ListNode of `{text}`. */
function parseAction(text: string): ListNode {
  const p = new Parser();
  p.parse(`{${text}}`);
  return p.root.nodes[0] as ListNode;
}

/** `UnquoteExtend`: a quoted string with Go's escapes (`strconv.UnquoteChar`), either quote. */
function unquoteExtend(s: string): string {
  if (s.length < 2) throw new Error('invalid syntax');
  const q = s[0]!;
  if (q !== s.at(-1) || (q !== '"' && q !== "'")) throw new Error('invalid syntax');
  const body = s.slice(1, -1);
  if (!body.includes('\\') && !body.includes(q)) return body;
  let out = '';
  for (let i = 0; i < body.length; ) {
    const c = body[i]!;
    if (c === q) throw new Error('invalid syntax');
    if (c !== '\\') {
      out += c;
      i++;
      continue;
    }
    const e = body[i + 1];
    const simple: Record<string, string> = {
      a: '\x07',
      b: '\b',
      f: '\f',
      n: '\n',
      r: '\r',
      t: '\t',
      v: '\v',
      '\\': '\\',
    };
    if (e !== undefined && simple[e] !== undefined) {
      out += simple[e];
      i += 2;
    } else if (e === q) {
      out += q;
      i += 2;
    } else if (e === 'x' || e === 'u' || e === 'U') {
      const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const hex = body.slice(i + 2, i + 2 + n);
      if (hex.length !== n || !/^[0-9a-fA-F]+$/.test(hex)) throw new Error('invalid syntax');
      out += String.fromCodePoint(Number.parseInt(hex, 16));
      i += 2 + n;
    } else if (e !== undefined && /[0-7]/.test(e)) {
      const oct = body.slice(i + 1, i + 4);
      if (!/^[0-7]{3}$/.test(oct) || Number.parseInt(oct, 8) > 255) throw new Error('invalid syntax');
      out += String.fromCharCode(Number.parseInt(oct, 8));
      i += 4;
    } else throw new Error('invalid syntax');
  }
  return out;
}

/** A parsed JSONPath template (`JSONPath` with `AllowMissingKeys(true)`). */
export interface JSONPath {
  readonly root: ListNode;
}

/**
 * `jsonpath.New(name).Parse(text)`.
 * @throws Error on a syntax error (the apiserver's "unrecognized column definition");
 *   {@link JSONPathUnsupported} for `range`/`end`.
 */
export function parseJSONPath(text: string): JSONPath {
  const p = new Parser();
  p.parse(text);
  return { root: p.root };
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

function evalRecursive(input: GoValue[]): Result {
  const result: GoValue[] = [];
  for (const v of input) {
    if (v === null) continue;
    const results = children(v);
    if (results.length !== 0) {
      result.push(v);
      const [output] = evalRecursive(results);
      result.push(...output);
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
function basicKind(v: GoValue): [Kind, number | string | boolean] {
  if (typeof v === 'boolean') return ['bool', v];
  if (typeof v === 'string') return ['string', v];
  if (typeof v === 'number') return [isGoInt(v) ? 'int' : 'float', v];
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

function equal(a: GoValue, b: GoValue): boolean {
  const [k1, v1] = basicKind(a);
  const [k2, v2] = basicKind(b);
  if (k1 !== k2) {
    if ((k1 === 'int' && k2 === 'uint') || (k1 === 'uint' && k2 === 'int')) return v1 === v2;
    throw new Error('incompatible types for comparison');
  }
  return v1 === v2;
}

function less(a: GoValue, b: GoValue): boolean {
  const [k1, v1] = basicKind(a);
  const [k2, v2] = basicKind(b);
  if (k1 !== k2) {
    if ((k1 === 'int' && k2 === 'uint') || (k1 === 'uint' && k2 === 'int'))
      return (v1 as number) < (v2 as number);
    throw new Error('incompatible types for comparison');
  }
  if (k1 === 'bool') throw new Error('invalid type for comparison');
  if (k1 === 'string') return strLess(v1 as string, v2 as string);
  return (v1 as number) < (v2 as number);
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

/** `json.Marshal` of unstructured data: map keys in Go's byte order, HTML-safe escapes. */
function goMarshal(v: GoValue): string {
  const sorted = (x: GoValue): GoValue => {
    if (Array.isArray(x)) return x.map(sorted);
    if (isMap(x)) {
      const out: Record<string, GoValue> = Object.create(null);
      const keys = Object.keys(x).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      for (const k of keys) out[k] = sorted(x[k]);
      return out;
    }
    return x;
  };
  return JSON.stringify(sorted(v))
    .replaceAll('<', '\\u003c')
    .replaceAll('>', '\\u003e')
    .replaceAll('&', '\\u0026')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}
