/**
 * Kubernetes label selectors: the lexer, parser and matcher of apimachinery
 * `pkg/labels/selector.go` (`labels.Parse`), with its error messages word for word, and the key /
 * value validation of `pkg/api/validate/content` (`IsLabelKey`, `IsLabelValue`) and
 * `pkg/util/validation/field` (`field.Invalid(...).Error()`), because a bad `labelSelector` must
 * be answered with the same 400 message the apiserver gives.
 */
import { goQuote } from './go-quote.ts';
import { labelKeyErrors, labelValueErrors } from './label-validation.ts';
import { badRequest } from './status.ts';

/** `selection.Operator` as spelled in the Go source (the `>`/`<` operators are `gt`/`lt`). */
export type LabelOperator = 'in' | 'notin' | '=' | '==' | '!=' | 'gt' | 'lt' | 'exists' | '!';

/**
 * One `Requirement`: values are sorted and de-duplicated, like the Go parser's `sets.String`;
 * `valueSet` holds the same values for O(1) `in`/`notin` lookups (a selector may carry ~100k).
 */
export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  readonly values: readonly string[];
  readonly valueSet: ReadonlySet<string>;
}

/** A parsed label selector: the AND of its requirements, sorted by key like `labels.Parse`. */
export class LabelSelector {
  readonly requirements: readonly LabelRequirement[];
  constructor(requirements: readonly LabelRequirement[]) {
    this.requirements = requirements;
  }

  /** True when the selector selects everything (`Selector.Empty()`). */
  get empty(): boolean {
    return this.requirements.length === 0;
  }

  /** `Selector.Matches`: `labels` may be undefined (an object without labels). */
  matches(labels: Readonly<Record<string, string>> | undefined): boolean {
    for (const r of this.requirements) if (!requirementMatches(r, labels)) return false;
    return true;
  }

  /** `Selector.String()`: canonical form (`a in (x,y),!b,c=d`). */
  toString(): string {
    return this.requirements.map(requirementString).join(',');
  }
}

/** The selector that selects everything (`labels.Everything()`). */
export const everythingLabels = new LabelSelector([]);

const INT64 = /^[+-]?\d+$/;

function lookup(labels: Readonly<Record<string, string>> | undefined, key: string): string | undefined {
  if (!labels || !Object.hasOwn(labels, key)) return undefined;
  return labels[key];
}

function requirementMatches(
  r: LabelRequirement,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const v = lookup(labels, r.key);
  switch (r.operator) {
    case 'in':
    case '=':
    case '==':
      return v !== undefined && r.valueSet.has(v);
    case 'notin':
    case '!=':
      return v === undefined || !r.valueSet.has(v);
    case 'exists':
      return v !== undefined;
    case '!':
      return v === undefined;
    case 'gt':
    case 'lt': {
      if (v === undefined || !INT64.test(v) || r.values.length !== 1) return false;
      const lhs = BigInt(v);
      const rhs = BigInt(r.values[0]!);
      return r.operator === 'gt' ? lhs > rhs : lhs < rhs;
    }
  }
}

function requirementString(r: LabelRequirement): string {
  switch (r.operator) {
    case 'exists':
      return r.key;
    case '!':
      return `!${r.key}`;
    case 'in':
    case 'notin':
      return `${r.key} ${r.operator} (${r.values.join(',')})`;
    case 'gt':
      return `${r.key}>${r.values[0]}`;
    case 'lt':
      return `${r.key}<${r.values[0]}`;
    default:
      return `${r.key}${r.operator}${r.values[0]}`;
  }
}

// ---- lexer (selector.go `Lexer`) ----

const enum_ = {
  Error: 0,
  EndOfString: 1,
  ClosedPar: 2,
  Comma: 3,
  DoesNotExist: 4,
  DoubleEquals: 5,
  Equals: 6,
  GreaterThan: 7,
  Identifier: 8,
  In: 9,
  LessThan: 10,
  NotEquals: 11,
  NotIn: 12,
  OpenPar: 13,
} as const;
type Token = (typeof enum_)[keyof typeof enum_];
const T = enum_;

const STRING_TO_TOKEN: ReadonlyMap<string, Token> = new Map<string, Token>([
  [')', T.ClosedPar],
  [',', T.Comma],
  ['!', T.DoesNotExist],
  ['==', T.DoubleEquals],
  ['=', T.Equals],
  ['>', T.GreaterThan],
  ['in', T.In],
  ['<', T.LessThan],
  ['!=', T.NotEquals],
  ['notin', T.NotIn],
  ['(', T.OpenPar],
]);

interface Item {
  tok: Token;
  lit: string;
}

function isWhitespace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\r' || c === '\n';
}

function isSpecial(c: string): boolean {
  return c === '=' || c === '!' || c === '(' || c === ')' || c === ',' || c === '>' || c === '<';
}

/**
 * The Go lexer (on bytes; a JS string index is close enough for ASCII). Its `read()` gives 0 past
 * the end, so a NUL reads as the end: at a token's start it ends the input (`\0`, `app=x \0junk`
 * is `app=x`), inside a token it ends that token, consumed (`app\0=x` is `app=x`).
 */
function lex(s: string): Item[] {
  const items: Item[] = [];
  let pos = 0;
  const read = (): string => (pos < s.length ? s[pos++]! : '\0');
  for (;;) {
    let ch = read();
    while (isWhitespace(ch)) ch = read();
    if (ch === '\0') return [...items, { tok: T.EndOfString, lit: '' }];
    pos--; // unread
    const special = isSpecial(ch); // scanSpecialSymbol: the longest known token; else scanIDOrKeyword
    let buffer = '';
    let last: Item | undefined;
    for (let c = read(); c !== '\0'; c = read()) {
      if (special ? !isSpecial(c) : isSpecial(c) || isWhitespace(c)) {
        pos--;
        break;
      }
      buffer += c;
      if (!special) continue;
      const tok = STRING_TO_TOKEN.get(buffer);
      if (tok !== undefined) last = { tok, lit: buffer };
      else if (last) {
        pos--;
        break;
      }
    }
    if (special) items.push(last ?? { tok: T.Error, lit: `error expected: keyword found '${buffer}'` });
    else items.push({ tok: STRING_TO_TOKEN.get(buffer) ?? T.Identifier, lit: buffer });
  }
}

// ---- parser (selector.go `Parser`) ----

const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';

class SelectorSyntaxError extends Error {}

class Parser {
  #items: Item[];
  #pos = 0;
  constructor(items: Item[]) {
    this.#items = items;
  }

  /** `lookahead`/`consume` in the Values context: `in`/`notin` read as identifiers. */
  #peek(values: boolean): Item {
    return asContext(this.#items[this.#pos]!, values);
  }
  #next(values: boolean): Item {
    return asContext(this.#items[this.#pos++]!, values);
  }

  parse(): LabelRequirement[] {
    const reqs: LabelRequirement[] = [];
    for (;;) {
      const { tok, lit } = this.#peek(true);
      if (tok === T.Identifier || tok === T.DoesNotExist) {
        let r: LabelRequirement;
        try {
          r = this.#requirement();
        } catch (e) {
          throw new SelectorSyntaxError(`unable to parse requirement: ${(e as Error).message}`);
        }
        reqs.push(r);
        const t = this.#next(true);
        if (t.tok === T.EndOfString) return reqs;
        if (t.tok === T.Comma) {
          const t2 = this.#peek(true);
          if (t2.tok !== T.Identifier && t2.tok !== T.DoesNotExist) {
            throw new SelectorSyntaxError(`found '${t2.lit}', expected: identifier after ','`);
          }
          continue;
        }
        throw new SelectorSyntaxError(`found '${t.lit}', expected: ',' or 'end of string'`);
      }
      if (tok === T.EndOfString) return reqs;
      throw new SelectorSyntaxError(`found '${lit}', expected: !, identifier, or 'end of string'`);
    }
  }

  #requirement(): LabelRequirement {
    let op: LabelOperator | undefined;
    let t = this.#next(true);
    if (t.tok === T.DoesNotExist) {
      op = '!';
      t = this.#next(true);
    }
    if (t.tok !== T.Identifier) throw new Error(`found '${t.lit}', expected: identifier`);
    const key = t.lit;
    const keyErr = validateLabelKey(key, '<nil>');
    if (keyErr) throw new Error(keyErr);
    const after = this.#peek(true).tok;
    if (after === T.EndOfString || after === T.Comma) {
      if (op !== '!') op = 'exists';
    }
    if (op === 'exists' || op === '!') return newRequirement(key, op, []);

    const o = this.#next(false);
    switch (o.tok) {
      case T.In:
        op = 'in';
        break;
      case T.Equals:
        op = '=';
        break;
      case T.DoubleEquals:
        op = '==';
        break;
      case T.GreaterThan:
        op = 'gt';
        break;
      case T.LessThan:
        op = 'lt';
        break;
      case T.NotIn:
        op = 'notin';
        break;
      case T.NotEquals:
        op = '!=';
        break;
      default:
        throw new Error(`found '${o.lit}', expected: ${BINARY_OPERATORS}`);
    }
    const values = op === 'in' || op === 'notin' ? this.#values() : this.#exactValue();
    return newRequirement(key, op, [...values].sort());
  }

  #values(): Set<string> {
    const open = this.#next(true);
    if (open.tok !== T.OpenPar) throw new Error(`found '${open.lit}' expected: '('`);
    const { tok, lit } = this.#peek(true);
    if (tok === T.Identifier || tok === T.Comma) {
      const s = this.#identifiers();
      if (this.#next(true).tok !== T.ClosedPar) throw new Error(`found '${lit}', expected: ')'`);
      return s;
    }
    if (tok === T.ClosedPar) {
      this.#next(true);
      return new Set(['']);
    }
    throw new Error(`found '${lit}', expected: ',', ')' or identifier`);
  }

  #identifiers(): Set<string> {
    const s = new Set<string>();
    for (;;) {
      const t = this.#next(true);
      if (t.tok === T.Identifier) {
        s.add(t.lit);
        const t2 = this.#peek(true);
        if (t2.tok === T.Comma) continue;
        if (t2.tok === T.ClosedPar) return s;
        throw new Error(`found '${t2.lit}', expected: ',' or ')'`);
      }
      if (t.tok === T.Comma) {
        if (s.size === 0) s.add('');
        const t2 = this.#peek(true);
        if (t2.tok === T.ClosedPar) {
          s.add('');
          return s;
        }
        if (t2.tok === T.Comma) s.add('');
        continue;
      }
      throw new Error(`found '${t.lit}', expected: ',', or identifier`);
    }
  }

  #exactValue(): Set<string> {
    const t = this.#peek(true);
    if (t.tok === T.EndOfString || t.tok === T.Comma) return new Set(['']);
    const v = this.#next(true);
    if (v.tok === T.Identifier) return new Set([v.lit]);
    throw new Error(`found '${v.lit}', expected: identifier`);
  }
}

function asContext(item: Item, values: boolean): Item {
  if (values && (item.tok === T.In || item.tok === T.NotIn)) return { tok: T.Identifier, lit: item.lit };
  return item;
}

/** `labels.NewRequirement` validation (operator arity is guaranteed by the parser). */
function newRequirement(key: string, operator: LabelOperator, values: string[]): LabelRequirement {
  const errs: string[] = [];
  const keyErr = validateLabelKey(key, 'key');
  if (keyErr) errs.push(keyErr);
  if (operator === 'gt' || operator === 'lt') {
    values.forEach((v, i) => {
      if (!INT64.test(v) || !fitsInt64(v)) {
        errs.push(
          `values[${i}]: Invalid value: ${goQuote(v)}: for 'Gt', 'Lt' operators, the value must be an integer`,
        );
      }
    });
  }
  values.forEach((v, i) => {
    const msgs = labelValueErrors(v);
    if (msgs.length > 0) errs.push(`values[${i}][${key}]: Invalid value: ${goQuote(v)}: ${msgs.join('; ')}`);
  });
  if (errs.length === 1) throw new Error(errs[0]);
  if (errs.length > 1) throw new Error(`[${errs.join(', ')}]`);
  return { key, operator, values, valueSet: new Set(values) };
}

function fitsInt64(v: string): boolean {
  const n = BigInt(v);
  return n >= -(2n ** 63n) && n < 2n ** 63n;
}

/** A `field.Invalid(path, key, …).Error()` message, or undefined when the key is valid. */
function validateLabelKey(key: string, path: string): string | undefined {
  const errs = labelKeyErrors(key);
  if (errs.length === 0) return undefined;
  return `${path}: Invalid value: ${goQuote(key)}: ${errs.join('; ')}`;
}

/**
 * Parses a `labelSelector` query value (`labels.Parse`). An empty string selects everything.
 * @throws StatusError 400 BadRequest with the apiserver's message on a syntax or validation error.
 */
export function parseLabelSelector(s: string): LabelSelector {
  if (s === '') return everythingLabels;
  let reqs: LabelRequirement[];
  try {
    reqs = new Parser(lex(s)).parse();
  } catch (e) {
    if (e instanceof SelectorSyntaxError) throw badRequest(e.message);
    throw e;
  }
  // sort.Sort(ByKey): not stable in Go, but equal keys AND together so order does not matter.
  reqs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return new LabelSelector(reqs);
}
