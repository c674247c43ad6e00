/**
 * `shardSelector` (the ShardedListAndWatch feature): a LIST or WATCH keeps the objects whose
 * FNV-1a 64 hash of `metadata.uid` (or `metadata.namespace`) falls in one of the ranges
 * `shardRange(object.metadata.uid, '0x…', '0x…')`, terms joined by `||`.
 *
 * The apiserver parses the expression with the CEL parser, then walks the tree
 * (apiserver `pkg/sharding/parser.go`: `Parse`, `walkExpr`, `parseShardRangeCall`,
 * `extractFieldPath`, `extractHexLiteral`); the selector, its wire form and its match are
 * apimachinery `pkg/sharding/selector.go`, `types.go` and `accessor.go`. This module copies the
 * walk and its messages exactly, over the part of CEL's grammar a shard selector uses:
 * identifiers, field selection, calls, parentheses, `||`, string literals without escapes and
 * decimal integers. An expression outside that part (any other operator or literal, a member
 * call, a comment, a reserved word) is not decided here ({@link parseShardSelector} answers
 * undefined): CEL's own syntax errors are the apiserver's to word.
 */
import { goQuote } from './go-quote.ts';
import { hashField, hexLess } from './shard-hash.ts';

/** `sharding.ShardRangeRequirement`: `[start, end)` over the hash of the field `key`. */
export interface ShardRange {
  key: 'object.metadata.uid' | 'object.metadata.namespace';
  start: string;
  end: string;
}

/** A parsed, non-empty shard selector. */
export interface ShardSelector {
  readonly ranges: readonly ShardRange[];
  /** `shardSelector.String()`: the wire form echoed in a list's `metadata.shardInfo.selector`. */
  readonly string: string;
  /** `shardSelector.Matches` of an object with this uid and namespace ('' when absent). */
  matches(uid: string, namespace: string): boolean;
}

/** The parse: a selector, the apiserver's error message (without its `invalid shard selector: ` prefix), or undefined (outside the grammar copied). */
export type ShardParse = { selector: ShardSelector } | { error: string } | undefined;

/** cel-go `ast.ExprKind` values the messages print (`%v` of the enum: its number). */
const CALL_KIND = 1;
const IDENT_KIND = 3;
const LITERAL_KIND = 5;
const SELECT_KIND = 7;

type Expr =
  | { kind: typeof CALL_KIND; fn: string; args: Expr[] }
  | { kind: typeof IDENT_KIND; name: string }
  | { kind: typeof SELECT_KIND; operand: Expr; field: string }
  | { kind: typeof LITERAL_KIND; value: string | bigint };

/** cel-go `parser.reservedIds`: not identifiers (a field name may be one). */
const RESERVED = new Set([
  'as',
  'break',
  'const',
  'continue',
  'else',
  'false',
  'for',
  'function',
  'if',
  'import',
  'in',
  'let',
  'loop',
  'package',
  'namespace',
  'null',
  'return',
  'true',
  'var',
  'void',
  'while',
]);
/** CEL's lexer keywords: never an identifier nor a field name. */
const KEYWORDS = new Set(['true', 'false', 'null', 'in']);

type Token =
  | { t: 'ident'; v: string }
  | { t: 'string'; v: string }
  | { t: 'int'; v: bigint }
  | { t: '(' | ')' | ',' | '.' | '||' | 'eof' };

class Outside extends Error {}

/** The tokens of `s`; throws {@link Outside} at anything this module does not copy. */
function tokenize(s: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f') {
      i++;
      continue;
    }
    if (c === '(' || c === ')' || c === ',' || c === '.') {
      out.push({ t: c });
      i++;
      continue;
    }
    if (c === '|' && s[i + 1] === '|') {
      out.push({ t: '||' });
      i += 2;
      continue;
    }
    if (c === "'" || c === '"') {
      const close = s.indexOf(c, i + 1);
      if (close < 0) throw new Outside();
      const v = s.slice(i + 1, close);
      // Escapes, line breaks and triple-quoted strings are CEL's to read.
      if (v.includes('\\') || v.includes('\n') || v.includes('\r') || (v === '' && s[close + 1] === c))
        throw new Outside();
      out.push({ t: 'string', v });
      i = close + 1;
      continue;
    }
    const ident = /^[_a-zA-Z][_a-zA-Z0-9]*/.exec(s.slice(i));
    if (ident) {
      // A raw or bytes string prefix (r'…', b'…') is CEL's.
      const next = s[i + ident[0].length];
      if (next === "'" || next === '"' || KEYWORDS.has(ident[0])) throw new Outside();
      out.push({ t: 'ident', v: ident[0] });
      i += ident[0].length;
      continue;
    }
    const int = /^[0-9]+/.exec(s.slice(i));
    if (int) {
      const next = s[i + int[0].length];
      // Hex, unsigned, float and exponent forms are CEL's; so is an int64 overflow.
      if (next !== undefined && /[_a-zA-Z0-9.]/.test(next)) throw new Outside();
      const v = BigInt(int[0]);
      if (v > 0x7fffffffffffffffn) throw new Outside();
      out.push({ t: 'int', v });
      i += int[0].length;
      continue;
    }
    throw new Outside();
  }
  out.push({ t: 'eof' });
  return out;
}

/** A recursive-descent parse of the tokens into cel-go's expression kinds. */
function parseTokens(tokens: Token[]): Expr {
  let p = 0;
  const peek = () => tokens[p]!;
  const take = (t: Token['t']) => {
    if (tokens[p]!.t !== t) throw new Outside();
    return tokens[p++]!;
  };
  const or = (): Expr => {
    let left = member();
    while (peek().t === '||') {
      p++;
      left = { kind: CALL_KIND, fn: '_||_', args: [left, member()] };
    }
    return left;
  };
  const member = (): Expr => {
    let e = primary();
    while (peek().t === '.') {
      p++;
      const f = take('ident') as { v: string };
      // A member call (`a.f(…)`) is CEL's.
      if (peek().t === '(') throw new Outside();
      e = { kind: SELECT_KIND, operand: e, field: f.v };
    }
    return e;
  };
  const primary = (): Expr => {
    const t = peek();
    p++;
    if (t.t === 'string') return { kind: LITERAL_KIND, value: t.v };
    if (t.t === 'int') return { kind: LITERAL_KIND, value: t.v };
    if (t.t === '(') {
      const e = or();
      take(')');
      return e;
    }
    if (t.t !== 'ident' || RESERVED.has(t.v)) throw new Outside();
    if (peek().t !== '(') return { kind: IDENT_KIND, name: t.v };
    p++;
    const args: Expr[] = [];
    if (peek().t !== ')') {
      args.push(or());
      while (peek().t === ',') {
        p++;
        args.push(or());
      }
    }
    take(')');
    return { kind: CALL_KIND, fn: t.v, args };
  };
  const e = or();
  take('eof');
  return e;
}

class Invalid extends Error {}

/** `walkExpr`. */
function walk(e: Expr): ShardRange[] {
  if (e.kind === CALL_KIND) {
    if (e.fn === '_||_') return [...walk(e.args[0]!), ...walk(e.args[1]!)];
    if (e.fn === 'shardRange') return [shardRangeCall(e.args)];
    throw new Invalid(`unsupported function ${goQuote(e.fn)}; only shardRange() and || are allowed`);
  }
  throw new Invalid(`unexpected expression kind ${e.kind}; expected shardRange() call or || operator`);
}

/** `parseShardRangeCall`. */
function shardRangeCall(args: Expr[]): ShardRange {
  if (args.length !== 3) throw new Invalid(`shardRange() requires exactly 3 arguments, got ${args.length}`);
  let path: string;
  try {
    path = fieldPath(args[0]!);
  } catch (err) {
    if (err instanceof Invalid) throw new Invalid(`shardRange() first argument: ${err.message}`);
    throw err;
  }
  if (path !== 'object.metadata.uid' && path !== 'object.metadata.namespace')
    throw new Invalid(
      `unsupported field path ${goQuote(path)}; supported: object.metadata.uid, object.metadata.namespace`,
    );
  const start = hexLiteral(args[1]!, 'hexStart');
  const end = hexLiteral(args[2]!, 'hexEnd');
  if (!hexLess(start, end)) throw new Invalid(`shard range start ${start} must be less than end ${end}`);
  return { key: path, start, end };
}

/** `extractFieldPath`. */
function fieldPath(e: Expr): string {
  if (e.kind === IDENT_KIND) return e.name;
  if (e.kind === SELECT_KIND) return `${fieldPath(e.operand)}.${e.field}`;
  throw new Invalid(`expected field path (e.g. object.metadata.uid), got expression kind ${e.kind}`);
}

/** `extractHexLiteral`. */
function hexLiteral(e: Expr, name: string): string {
  if (e.kind !== LITERAL_KIND)
    throw new Invalid(`${name} must be a string literal (e.g. '0xff'), got expression kind ${e.kind}`);
  // The only non-string literal read here is an int (Go `%T`: int64).
  if (typeof e.value !== 'string') throw new Invalid(`${name} must be a string literal, got int64`);
  const s = e.value;
  if (!s.startsWith('0x')) throw new Invalid(`${name} must have '0x' prefix, got ${goQuote(s)}`);
  const hex = s.slice(2);
  if (hex === '') throw new Invalid(`${name}: hex value is required after '0x'`);
  // Go's len: bytes.
  const len = Buffer.byteLength(hex, 'utf8');
  if (len > 17) throw new Invalid(`${name}: hex value too long (${len} chars, max 17): ${goQuote(hex)}`);
  for (const c of hex)
    if ((c < '0' || c > '9') && (c < 'a' || c > 'f'))
      throw new Invalid(`${name}: invalid hex character ${goQuote(c)} in ${goQuote(s)}`);
  if (len === 17) {
    if (s !== '0x10000000000000000')
      throw new Invalid(
        `${name}: 17-digit hex value must be '0x10000000000000000' (2^64), got ${goQuote(s)}`,
      );
  } else if (len !== 16) {
    const padded = `0x${'0'.repeat(16 - len)}${hex}`;
    throw new Invalid(
      `${name} must be a 0x-prefixed 16-digit hex value, got ${goQuote(s)} (did you mean ${goQuote(padded)}?)`,
    );
  }
  return s;
}

/** Go `strings.TrimSpace`'s ASCII part; undefined when `s` has other (Unicode) space at an end. */
function trimSpace(s: string): string | undefined {
  const t = s.replace(/^[\t\n\v\f\r ]+|[\t\n\v\f\r ]+$/g, '');
  if (/^\s|\s$/u.test(t) || /^[\u0085\u00a0]|[\u0085\u00a0]$/.test(t)) return undefined;
  return t;
}

/** Code points above which an expression is left to the apiserver (CEL's limit is 100,000). */
export const MAX_COPIED_CODE_POINTS = 50_000;

/** Parenthesis nesting above which an expression is left to the apiserver (CEL's recursion limit is 250 rule levels). */
export const MAX_COPIED_NESTING = 32;

/** Whether `s` is long or nested enough that CEL's size or recursion limit might apply. */
function nearCelLimits(s: string): boolean {
  if (s.length > MAX_COPIED_CODE_POINTS) return true;
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x28 && ++depth > MAX_COPIED_NESTING) return true;
    if (c === 0x29) depth--;
  }
  return false;
}

/**
 * `sharding.Parse` of a `shardSelector` query value. The apiserver answers an error as
 * `invalid shard selector: <error>`.
 */
export function parseShardSelector(expr: string): ShardParse {
  const trimmed = trimSpace(expr);
  if (trimmed === undefined) return undefined;
  if (trimmed === '')
    return { error: 'empty shard selector is not allowed; omit the parameter for unfiltered lists' };
  // CEL's parser limits (cel-go `parser.go`: 100,000 code points, a recursion depth of 250) are
  // not copied: an expression anywhere near them is the apiserver's to answer.
  if (nearCelLimits(trimmed)) return undefined;
  let tree: Expr;
  try {
    tree = parseTokens(tokenize(trimmed));
  } catch (err) {
    if (err instanceof Outside) return undefined;
    throw err;
  }
  let ranges: ShardRange[];
  try {
    ranges = walk(tree);
    for (const r of ranges.slice(1))
      if (r.key !== ranges[0]!.key)
        throw new Invalid(
          `all shard ranges must use the same field, got ${goQuote(ranges[0]!.key)} and ${goQuote(r.key)}`,
        );
  } catch (err) {
    if (err instanceof Invalid) return { error: err.message };
    throw err;
  }
  return { selector: newSelector(ranges) };
}

/** `sharding.NewSelector` (non-empty): its `String()` and `Matches`. */
function newSelector(ranges: ShardRange[]): ShardSelector {
  const string = ranges.map((r) => `shardRange(${r.key}, '${r.start}', '${r.end}')`).join(' || ');
  const byNamespace = ranges[0]!.key === 'object.metadata.namespace';
  return {
    ranges,
    string,
    matches(uid: string, namespace: string): boolean {
      const h = `0x${hashField(byNamespace ? namespace : uid)}`;
      for (const r of ranges) if (!hexLess(h, r.start) && hexLess(h, r.end)) return true;
      return false;
    },
  };
}
