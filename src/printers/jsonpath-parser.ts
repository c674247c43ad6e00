/**
 * The parser of client-go's JSONPath (k8s.io/client-go v0.37.2 `util/jsonpath/parser.go`),
 * ported line by line: a template's text and `{…}` actions into nodes (fields, `[…]` indexes,
 * slices, unions and quoted keys, `[?(…)]` filters, `..`, `*`, literals, identifiers), with its
 * errors. `range`/`end` are not ported ({@link JSONPathUnsupported}). Evaluated by `jsonpath.ts`.
 */

/** A path the port does not evaluate (`range`/`end`). */
export class JSONPathUnsupported extends Error {}

export type Node =
  | { t: 'list'; nodes: Node[] }
  | { t: 'text'; text: string }
  | { t: 'field'; name: string }
  | { t: 'array'; params: Param[] }
  | { t: 'filter'; left: ListNode; right: ListNode; op: string }
  | { t: 'int'; value: number | bigint }
  | { t: 'float'; value: number }
  | { t: 'bool'; value: boolean }
  | { t: 'wildcard' }
  | { t: 'recursive' }
  | { t: 'union'; nodes: ListNode[] }
  | { t: 'identifier'; name: string };
export type ListNode = { t: 'list'; nodes: Node[] };
export interface Param {
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
    // An int64 beyond 2^53 kept exact (compared with the object's int64s).
    if (i !== undefined) cur.nodes.push({ t: 'int', value: Number.isSafeInteger(i) ? i : BigInt(value) });
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
export function parseAction(text: string): ListNode {
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
