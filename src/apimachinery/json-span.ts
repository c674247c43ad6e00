/**
 * Byte spans inside JSON text without parsing it into values: a scan of the top-level object
 * that steps over strings (with their escapes) and nested objects/arrays. Used to cut an
 * object's `metadata` value out of the bytes the upstream sent (the apiserver's
 * `asPartialObjectMetadata` answers only that value), whatever the key order: built-in kinds
 * write `metadata` third, custom resources (unstructured, keys sorted) wherever it sorts.
 */

import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isSpace,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from './json-bytes.ts';

function skipSpace(b: Uint8Array, i: number): number {
  while (i < b.length && isSpace(b[i]!)) i++;
  return i;
}

/** Index just past the string starting at `i` (a `"`); -1 when unterminated. */
function skipString(b: Uint8Array, i: number): number {
  for (let j = i + 1; j < b.length; j++) {
    const c = b[j]!;
    if (c === BACKSLASH) j++;
    else if (c === QUOTE) return j + 1;
  }
  return -1;
}

/** Index just past the value starting at `i`; -1 when the text ends first. */
function skipValue(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === undefined) return -1;
  if (c === QUOTE) return skipString(b, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    for (let j = i; j < b.length; j++) {
      const d = b[j]!;
      if (d === QUOTE) {
        j = skipString(b, j);
        if (j < 0) return -1;
        j--;
      } else if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  let j = i;
  while (j < b.length) {
    const d = b[j]!;
    if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isSpace(d)) break;
    j++;
  }
  return j;
}

/** `"key"` as the bytes of a JSON string without escapes (the keys looked up are plain ASCII). */
function keyEquals(b: Uint8Array, start: number, end: number, key: Uint8Array): boolean {
  // start at the opening quote, end past the closing one
  if (end - start - 2 !== key.length) return false;
  for (let k = 0; k < key.length; k++) if (b[start + 1 + k] !== key[k]) return false;
  return true;
}

/**
 * The span `[start, end)` of the value of the top-level member `key` of the JSON object in `b`
 * (the first such member), or undefined when `b` is not an object, has no such member, or is
 * malformed before it. `key` must be plain ASCII without characters JSON escapes; a key written
 * with escapes in `b` (`"\u006detadata"`) is not recognised (encoding/json never writes one).
 * O(bytes up to the end of that value): the members after it are not read.
 */
export function topLevelValueSpan(b: Uint8Array, key: string): readonly [number, number] | undefined {
  const want = Buffer.from(key, 'latin1');
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_BRACE) return undefined;
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_BRACE) return undefined;
  for (;;) {
    if (b[i] !== QUOTE) return undefined;
    const keyEnd = skipString(b, i);
    if (keyEnd < 0) return undefined;
    const match = keyEquals(b, i, keyEnd, want);
    i = skipSpace(b, keyEnd);
    if (b[i] !== COLON) return undefined;
    const valueStart = skipSpace(b, i + 1);
    const valueEnd = skipValue(b, valueStart);
    if (valueEnd < 0 || valueEnd === valueStart) return undefined;
    if (match) return [valueStart, valueEnd];
    i = skipSpace(b, valueEnd);
    if (b[i] !== COMMA) return undefined;
    i = skipSpace(b, i + 1);
  }
}
