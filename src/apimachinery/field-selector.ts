/**
 * Kubernetes field selectors: apimachinery `pkg/fields/selector.go` (`ParseSelector`: terms split
 * on unescaped commas, `!=` / `==` / `=` found left to right, values unescaped with `\\`, `\,`,
 * `\=`), with its error messages word for word.
 */

import { type FieldSet, isSelectableField } from './field-sets.ts';
import type { ResourceInfo } from './gvr.ts';
import { badRequest } from './status.ts';

/** One `hasTerm` (`=`, `==`) or `notHasTerm` (`!=`). */
export interface FieldTerm {
  readonly field: string;
  readonly op: '=' | '!=';
  readonly value: string;
}

/** A `fields.Fields` read one field at a time: the value of `name`, "" when the set lacks it. */
export interface FieldReader {
  field(name: string): string;
}

/** A parsed field selector: the AND of its terms. */
export class FieldSelector {
  readonly terms: readonly FieldTerm[];
  constructor(terms: readonly FieldTerm[]) {
    this.terms = terms;
  }

  /** True when the selector selects everything. */
  get empty(): boolean {
    return this.terms.length === 0;
  }

  /** `Selector.Matches` over a `fields.Set`; a missing field reads as "". */
  matches(fields: FieldSet): boolean {
    for (const t of this.terms) {
      const v = Object.hasOwn(fields, t.field) ? fields[t.field] : '';
      if ((v === t.value) !== (t.op === '=')) return false;
    }
    return true;
  }

  /**
   * {@link matches} over a field set read one field at a time (a store entry's fields, not
   * built as an object): `fields.field(name)` is the value, "" when the set lacks it.
   */
  matchesReader(fields: FieldReader): boolean {
    for (const t of this.terms) if ((fields.field(t.field) === t.value) !== (t.op === '=')) return false;
    return true;
  }

  /**
   * `RequiresExactMatch`: the value an `=` term requires for `field` (what an index can serve),
   * or undefined.
   */
  exact(field: string): string | undefined {
    for (const t of this.terms) if (t.field === field && t.op === '=') return t.value;
    return undefined;
  }

  /** `Selector.String()`. */
  toString(): string {
    return this.terms.map((t) => `${t.field}${t.op}${t.value}`).join(',');
  }
}

/** The selector that selects everything (`fields.Everything()`). */
export const everythingFields = new FieldSelector([]);

/** `splitTerms`: split on commas not escaped by a backslash (the backslash is kept). */
function splitTerms(s: string): string[] {
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

const OPERATORS = ['!=', '==', '='] as const;

/** `splitTerm`: the first position where any operator starts splits lhs from rhs. */
function splitTerm(term: string): { lhs: string; op: '=' | '!='; rhs: string } | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of OPERATORS) {
      if (term.startsWith(op, i)) {
        return { lhs: term.slice(0, i), op: op === '!=' ? '!=' : '=', rhs: term.slice(i + op.length) };
      }
    }
  }
  return undefined;
}

/** `UnescapeValue`. @throws Error with the apiserver's message. */
function unescapeValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c === '\\' || c === ',' || c === '=') out += c;
      else throw new Error(`invalid field selector: invalid escape sequence: \\${c}`);
      inSlash = false;
      continue;
    }
    if (c === '\\') inSlash = true;
    else if (c === ',' || c === '=') {
      // Go formats the rune with %v: its code point.
      throw new Error(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    } else out += c;
  }
  if (inSlash) throw new Error('invalid field selector: invalid escape sequence: \\');
  return out;
}

/**
 * `fields.ParseSelector` for any resource: the terms of a `fieldSelector` value, sorted as the
 * Go parser sorts them. An empty string has none.
 * @throws StatusError 400 BadRequest with the apiserver's message on a syntax error.
 */
export function parseFieldTerms(s: string): FieldTerm[] {
  if (s === '') return [];
  const parts = splitTerms(s).sort();
  const terms: FieldTerm[] = [];
  for (const part of parts) {
    if (part === '') continue;
    const t = splitTerm(part);
    if (!t) throw badRequest(`invalid selector: '${s}'; can't understand '${part}'`);
    let value: string;
    try {
      value = unescapeValue(t.rhs);
    } catch (e) {
      throw badRequest((e as Error).message);
    }
    terms.push({ field: t.lhs, op: t.op, value });
  }
  return terms;
}

/**
 * Parses a `fieldSelector` query value for `resource`. An empty string selects everything.
 * @returns the selector, or undefined when a term names a field the cache cannot evaluate for
 *   this resource (the caller then passes the request upstream, which answers for itself).
 * @throws StatusError 400 BadRequest with the apiserver's message on a syntax error.
 */
export function parseFieldSelector(s: string, resource: ResourceInfo): FieldSelector | undefined {
  if (s === '') return everythingFields;
  const terms = parseFieldTerms(s);
  for (const t of terms) if (!isSelectableField(resource, t.field)) return undefined;
  return new FieldSelector(terms);
}
