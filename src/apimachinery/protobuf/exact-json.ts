/**
 * Go-written JSON read for the protobuf encoder (encode-object.ts): parsed by plain JSON.parse
 * and, only when an integer beyond 2^53 was rounded, again keeping such integers as bigint; and
 * FieldsV1's raw JSON written back as json-iterator writes it.
 */

/** A parsed JSON value (integers beyond 2^53 as bigint when {@link parseGoJSON} parsed it). */
export type Json = null | boolean | number | bigint | string | Json[] | { [k: string]: Json };

/**
 * Thrown by the encoder when an integer field holds a number JSON.parse could not keep exactly
 * (beyond 2^53): the caller parses again with {@link parseGoJSON} and encodes once more
 * ({@link encodeFromText}). Not a decline.
 */
export class LossyNumber extends Error {
  constructor() {
    super('an integer beyond 2^53 parsed as a double');
    this.name = 'LossyNumber';
  }
}
/** The one {@link LossyNumber} the encoder throws (no stack trace built per object). */
export const LOSSY = new LossyNumber();

const revive = (_k: string, v: unknown, ctx?: { source?: string }) =>
  typeof v === 'number' && !Number.isSafeInteger(v) && ctx?.source && /^-?\d+$/.test(ctx.source)
    ? BigInt(ctx.source)
    : v;

/**
 * Parses Go-written JSON, keeping integers beyond 2^53 exact as bigint (JSON.parse source
 * access, ES2025). Throws SyntaxError on malformed JSON. Slower than JSON.parse (a reviver call
 * per value): {@link encodeFromText} parses plainly first and uses this only when it must.
 */
export function parseGoJSON(text: string): Json {
  return JSON.parse(text, revive as (k: string, v: unknown) => unknown) as Json;
}

/**
 * `encode(parsed)` of Go-written JSON `text`, parsed by plain JSON.parse (no reviver, no scan
 * for long numbers): when the encoder meets an integer it could not keep exactly
 * ({@link LossyNumber}) it calls `rewind` (to drop what it wrote) and encodes again from
 * {@link parseGoJSON}. Throws what `encode` throws, SyntaxError on malformed JSON.
 */
export function encodeFromText<T>(text: string, encode: (parsed: Json) => T, rewind?: () => void): T {
  try {
    return encode(JSON.parse(text) as Json);
  } catch (err) {
    if (err !== LOSSY) throw err;
  }
  rewind?.();
  return encode(parseGoJSON(text));
}

/** 16 or more digits in a row: a number that may lie beyond 2^53. */
export const LONG_DIGITS = /\d{16}/;

/** Whether a parsed JSON value holds a number beyond 2^53 (rounded by JSON.parse). */
export function hasUnsafeNumber(v: Json): boolean {
  if (typeof v === 'number') return Number.isInteger(v) && !Number.isSafeInteger(v);
  if (typeof v !== 'object' || v === null) return false;
  for (const x of Array.isArray(v) ? v : Object.values(v)) if (hasUnsafeNumber(x)) return true;
  return false;
}

/** JSON.stringify writing a bigint (from {@link parseGoJSON}) as its digits. */
const bigintDigits = (_k: string, v: unknown) =>
  typeof v === 'bigint' ? (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(v.toString()) : v;

/**
 * The compact JSON structured-merge-diff writes for a FieldsV1 (`fieldpath/serialize.go`:
 * json-iterator's `Stream.WriteObjectField`/`WriteString`, `stream_str.go`
 * `writeStringSlowPath`, which escapes no HTML): JS's `JSON.stringify` but for `\u0008` and
 * `\u000c` where JS writes `\b` and `\f` (json-iterator shortens only `\n`, `\r`, `\t`).
 */
export function jsoniterJSON(v: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(v);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    s = JSON.stringify(v, bigintDigits); // a bigint (only JSON.stringify's TypeError besides cycles)
  }
  // Most FieldsV1 carry neither: skip the replace (a callback per backslash, and k:{…} keys have many).
  if (!s.includes('\\b') && !s.includes('\\f')) return s;
  return s.replace(/\\(.)/g, (m, esc: string) => (esc === 'b' ? '\\u0008' : esc === 'f' ? '\\u000c' : m));
}
