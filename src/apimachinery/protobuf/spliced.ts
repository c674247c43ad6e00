/**
 * Kept protobuf bytes that share their long strings with the object's stored JSON (issue 32's
 * memory goal). A protobuf message carries most of its object's string values as the same UTF-8
 * bytes the JSON carries between quotes (annotations, FieldsV1's raw JSON, long names, images):
 * kept whole, a pod's message added 0.57–0.85 of its JSON bytes to the cache. Spliced, only the
 * bytes not found in the JSON are kept, and for each long run that is, where it is in the JSON;
 * the message is the pieces in order. Byte equality is checked when the spans are found
 * (`indexOf` of the protobuf bytes themselves in the JSON), so a span is never wrong: a string
 * whose JSON form differs (escapes) is simply not found and stays in the kept bytes.
 *
 * The kept form is one byte string (no JS object per message: the store keeps it in its slabs,
 * `StoreEntry.keep`): the message's own bytes, then one 12-byte record per span (uint32 LE: its
 * position in the own bytes, its start in the JSON, its length), then the span count (uint32
 * LE). The JSON is always the same bytes for the same object version (its stored LIST item,
 * `StoreEntry.listItem`: the store may move them, offsets into them stay valid), passed again
 * whenever the message is read.
 */

/** Strings shorter than this many UTF-8 bytes stay in the own bytes (a span costs 12 bytes and two copy calls). */
export const MIN_SPAN_BYTES = 64;

const SPAN = 12;

/** Scratch for {@link splice}'s result (grown as needed). */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);

/**
 * `bytes` (a message) in the kept form: each of `strings` (`[start, length]` pairs in `bytes`,
 * in order, not overlapping) of at least {@link MIN_SPAN_BYTES} whose exact bytes occur in `json`
 * becomes a span of `json`; the rest is copied. Returns a view of a scratch buffer, valid until
 * the next call: the caller copies it.
 */
export function splice(bytes: Buffer, strings: readonly number[], json: Buffer): Buffer {
  const found: number[] = [];
  let spliced = 0;
  for (let i = 0; i < strings.length; i += 2) {
    const start = strings[i]!;
    const len = strings[i + 1]!;
    if (len < MIN_SPAN_BYTES) continue;
    const at = json.indexOf(bytes.subarray(start, start + len));
    if (at < 0) continue;
    found.push(start - spliced, at, len); // position in own: bytes before it minus those spliced out
    spliced += len;
  }
  const spans = found.length / 3;
  const ownLen = bytes.length - spliced;
  const size = ownLen + spans * SPAN + 4;
  if (scratch.length < size) scratch = Buffer.allocUnsafeSlow(Math.max(size, scratch.length * 2));
  const out = scratch;
  let from = 0;
  let to = 0;
  for (let i = 0; i < found.length; i += 3) {
    const at = found[i]!;
    const start = at + (from - to); // where the span starts in `bytes`
    bytes.copy(out, to, from, start);
    to = at;
    from = start + found[i + 2]!;
  }
  bytes.copy(out, to, from);
  let p = ownLen;
  for (const v of found) {
    out.writeUInt32LE(v, p);
    p += 4;
  }
  out.writeUInt32LE(spans, p);
  return out.subarray(0, size);
}

/** The uint32 LE at `p` of `k` (no bounds checks: `p` is a record's, inside `k`). */
function u32(k: Buffer, p: number): number {
  return (k[p]! | (k[p + 1]! << 8) | (k[p + 2]! << 16)) + k[p + 3]! * 0x1000000;
}

/** The number of spans of kept bytes `k`. */
function spanCount(k: Buffer): number {
  return u32(k, k.length - 4);
}

/** The message's length in bytes, of kept bytes `k`. */
export function keptLength(k: Buffer): number {
  return keptLengthAt(k, 0, k.length);
}

/** {@link keptLength} of kept bytes `buf[start, end)` (no view of them needed). */
export function keptLengthAt(buf: Buffer, start: number, end: number): number {
  const last = end - 4;
  let own = last - u32(buf, last) * SPAN;
  let len = own - start;
  for (; own < last; own += SPAN) len += u32(buf, own + 8);
  return len;
}

/**
 * Copies bytes `[from, to)` of the message kept as `k` (its JSON: `json` from `jsonAt`) into
 * `target` at `at`; returns `at` plus the bytes copied. `to` ≤ its {@link keptLength}.
 */
export function copyKept(
  k: Buffer,
  json: Buffer,
  from: number,
  to: number,
  target: Buffer,
  at: number,
  jsonAt = 0,
): number {
  const n = spanCount(k);
  const ownLen = k.length - 4 - n * SPAN;
  if (n === 0) return at + k.copy(target, at, from, Math.min(to, ownLen));
  if (from === 0 && to === ownLen + keptSpanBytes(k, ownLen, n))
    return copyWhole(k, json, jsonAt, n, ownLen, target, at);
  // Walk the pieces: own[o, span.at) then the span's JSON bytes, …, then own's tail; `pos` is
  // the position in the message where the current piece starts.
  let pos = 0;
  let o = 0;
  for (let s = 0; s <= n; s++) {
    const rec = ownLen + s * SPAN;
    const ownEnd = s < n ? u32(k, rec) : ownLen;
    const ownPiece = ownEnd - o;
    if (to <= pos) return at;
    if (from < pos + ownPiece)
      at += k.copy(target, at, o + Math.max(from - pos, 0), o + Math.min(to - pos, ownPiece));
    pos += ownPiece;
    o = ownEnd;
    if (s === n) break;
    const js = jsonAt + u32(k, rec + 4);
    const len = u32(k, rec + 8);
    if (to <= pos) return at;
    if (from < pos + len)
      at += json.copy(target, at, js + Math.max(from - pos, 0), js + Math.min(to - pos, len));
    pos += len;
  }
  return at;
}

/** Bytes of `k`'s `n` spans (its records after `ownLen` own bytes). */
function keptSpanBytes(k: Buffer, ownLen: number, n: number): number {
  let len = 0;
  for (let s = 0, p = ownLen + 8; s < n; s++, p += SPAN) len += u32(k, p);
  return len;
}

/** {@link copyKept} of the whole message: the pieces in turn, no range arithmetic. */
function copyWhole(
  k: Buffer,
  json: Buffer,
  jsonAt: number,
  n: number,
  ownLen: number,
  target: Buffer,
  at: number,
): number {
  let o = 0;
  for (let s = 0, rec = ownLen; s < n; s++, rec += SPAN) {
    const ownEnd = u32(k, rec);
    if (ownEnd > o) at += k.copy(target, at, o, ownEnd);
    o = ownEnd;
    const js = jsonAt + u32(k, rec + 4);
    at += json.copy(target, at, js, js + u32(k, rec + 8));
  }
  if (ownLen > o) at += k.copy(target, at, o, ownLen);
  return at;
}

/**
 * Copies the whole message kept as `k` (its JSON: `json`) into `target` at `at`, which has room
 * for its {@link keptLength}; returns `at` plus its length. A LIST's fast path: the pieces in
 * turn, no range arithmetic (a copy of a small piece by a JS loop measured slower than
 * `Buffer.copy`, 51 bytes included).
 */
export function copyWholeKept(k: Buffer, json: Buffer, target: Buffer, at: number): number {
  return copyWholeKeptAt(k, 0, k.length, json, target, at);
}

/**
 * {@link copyWholeKept} of kept bytes `buf[start, end)` and the JSON at `json[jsonAt, …)` (no
 * view of either needed).
 */
export function copyWholeKeptAt(
  buf: Buffer,
  start: number,
  end: number,
  json: Buffer,
  target: Buffer,
  at: number,
  jsonAt = 0,
): number {
  const last = end - 4;
  const ownEnd = last - u32(buf, last) * SPAN;
  let o = start;
  for (let rec = ownEnd; rec < last; rec += SPAN) {
    const pieceEnd = start + u32(buf, rec);
    if (pieceEnd > o) at += buf.copy(target, at, o, pieceEnd);
    o = pieceEnd;
    const js = jsonAt + u32(buf, rec + 4);
    at += json.copy(target, at, js, js + u32(buf, rec + 8));
  }
  return ownEnd > o ? at + buf.copy(target, at, o, ownEnd) : at;
}

/**
 * The bytes of kept `k` before the message inside it: a list item field's tag and length
 * (`keepListItem` keeps `2: message`; spans are strings, never in that prefix).
 */
export function fieldPrefixLength(k: Buffer): number {
  let i = 1;
  while (k[i]! & 0x80) i++;
  return i + 1;
}

/** The whole message kept as `k` (its JSON: `json`): a view of `k` when it has no spans, else a new Buffer. */
export function keptMessage(k: Buffer, json: Buffer): Buffer {
  const n = spanCount(k);
  if (n === 0) return k.subarray(0, k.length - 4);
  const out = Buffer.allocUnsafe(keptLength(k));
  copyKept(k, json, 0, out.length, out, 0);
  return out;
}
