/**
 * Kept protobuf bytes that share their long strings with the object's stored JSON (issue 32's
 * memory goal). A protobuf message carries most of its object's string values as the same UTF-8
 * bytes the JSON carries between quotes (annotations, FieldsV1's raw JSON, long names, images):
 * kept whole, a pod's message added 0.57–0.85 of its JSON bytes to the cache. A {@link Spliced}
 * keeps only the bytes that are not found in the JSON ({@link Spliced.own}) and, for each long
 * run that is, where it is in the JSON; the whole message is the pieces in order. Byte equality is
 * checked when the spans are found (`indexOf` of the protobuf bytes themselves in the JSON), so
 * a span is never wrong: a string whose JSON form differs (escapes) is simply not found and stays
 * in `own`.
 *
 * The JSON is always the same Buffer for the same object version (its stored LIST item,
 * `StoreEntry.listItem`, a view of the slab bytes: the store may move them, the offsets into it
 * stay valid), passed again whenever the bytes are read.
 */

/** Strings shorter than this many UTF-8 bytes stay in `own` (a span costs 3 numbers and a copy call). */
export const MIN_SPAN_BYTES = 64;

/**
 * A message as `own` bytes with spans of the JSON spliced in: `spans` holds triples (position in
 * `own` where the span goes, start in the JSON, length), in order. {@link length} bytes in all.
 */
export class Spliced {
  readonly own: Buffer;
  readonly spans: readonly number[];
  readonly length: number;

  constructor(own: Buffer, spans: readonly number[], length: number) {
    this.own = own;
    this.spans = spans;
    this.length = length;
  }
}

/** Kept bytes: whole (a Buffer of their own), or {@link Spliced} with the object's JSON. */
export type KeptBytes = Buffer | Spliced;

/**
 * `bytes` (a view: not kept) as kept bytes: each of `strings` (`[start, length]` pairs in
 * `bytes`, in order, not overlapping) of at least {@link MIN_SPAN_BYTES} whose exact bytes occur
 * in `json` becomes a span of `json`; the rest is copied. A copy of `bytes` when none is found.
 */
export function splice(bytes: Buffer, strings: readonly number[], json: Buffer): KeptBytes {
  const spans: number[] = [];
  let kept = 0;
  for (let i = 0; i < strings.length; i += 2) {
    const start = strings[i]!;
    const len = strings[i + 1]!;
    if (len < MIN_SPAN_BYTES) continue;
    const at = json.indexOf(bytes.subarray(start, start + len));
    if (at < 0) continue;
    spans.push(start - kept, at, len); // position in own: bytes before it minus those spliced out
    kept += len;
  }
  if (spans.length === 0) return Buffer.from(bytes);
  const own = Buffer.allocUnsafe(bytes.length - kept);
  let from = 0;
  let to = 0;
  for (let i = 0; i < spans.length; i += 3) {
    const at = spans[i]!;
    const start = at + (from - to); // where the span starts in `bytes`
    bytes.copy(own, to, from, start);
    to = at;
    from = start + spans[i + 2]!;
  }
  bytes.copy(own, to, from);
  return new Spliced(own, spans, bytes.length);
}

/**
 * Copies bytes `[from, to)` of `k` (its JSON: `json`) into `target` at `at`; returns `at` plus
 * the bytes copied. `to` ≤ `k.length`.
 */
export function copyKept(
  k: KeptBytes,
  json: Buffer,
  from: number,
  to: number,
  target: Buffer,
  at: number,
): number {
  if (Buffer.isBuffer(k)) return at + k.copy(target, at, from, to);
  const { own, spans } = k;
  // Walk the pieces: own[o0, spans[i]) then json span i, …, then own's tail; `pos` is the
  // position in the whole where the current piece starts.
  let pos = 0;
  let o = 0;
  for (let i = 0; i <= spans.length; i += 3) {
    const ownEnd = i < spans.length ? spans[i]! : own.length;
    const ownLen = ownEnd - o;
    if (to <= pos) return at;
    if (from < pos + ownLen) {
      const a = Math.max(from, pos) - pos;
      const b = Math.min(to, pos + ownLen) - pos;
      at += own.copy(target, at, o + a, o + b);
    }
    pos += ownLen;
    o = ownEnd;
    if (i === spans.length) break;
    const js = spans[i + 1]!;
    const len = spans[i + 2]!;
    if (to <= pos) return at;
    if (from < pos + len) {
      const a = Math.max(from, pos) - pos;
      const b = Math.min(to, pos + len) - pos;
      at += json.copy(target, at, js + a, js + b);
    }
    pos += len;
  }
  return at;
}

/** The whole bytes of `k` (its JSON: `json`): `k` itself when whole, else a new Buffer. */
export function keptBytes(k: KeptBytes, json: Buffer): Buffer {
  if (Buffer.isBuffer(k)) return k;
  const out = Buffer.allocUnsafe(k.length);
  copyKept(k, json, 0, k.length, out, 0);
  return out;
}

/** Bytes `k` holds of its own (besides the JSON it shares): for tests and profiles. */
export function ownBytes(k: KeptBytes): number {
  return Buffer.isBuffer(k) ? k.length : k.own.length + 8 * k.spans.length;
}
