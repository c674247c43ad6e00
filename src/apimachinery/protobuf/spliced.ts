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
 * What is left of a message is then mostly the same from one object of a type to the next (tags,
 * lengths, defaults, short strings): runs of it found in the first kept message of its type (the
 * process's dictionary, {@link MIN_DICTIONARY_BYTES}) are spans too, of the dictionary; a bench
 * pod's kept bytes went from ~780 to ~350.
 *
 * The kept form is one byte string (no JS object per message: the store keeps it in its slabs,
 * `StoreEntry.keep`): the message's own bytes, then one 12-byte record per span (uint32 LE: its
 * position in the own bytes, its start in the JSON or, with bit 31 set, in the dictionary, its
 * length), then the span count (uint32 LE). The JSON is always the same bytes for the same object version (its stored LIST item,
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
 * becomes a span of `json`; with `dictionaryKey` (the message type; `bytes` a list item field,
 * see {@link fieldPrefixLength}), runs of the rest found in the dictionary become spans of it
 * (the first message of each key is added to it first); the rest is copied. Returns a view of a
 * scratch buffer, valid until the next call: the caller copies it.
 */
export function splice(
  bytes: Buffer,
  strings: readonly number[],
  json: Buffer,
  dictionaryKey?: string,
): Buffer {
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
  if (dictionaryKey !== undefined) return withDictionary(out, ownLen, found, dictionaryKey);
  let p = ownLen;
  for (const v of found) {
    out.writeUInt32LE(v, p);
    p += 4;
  }
  out.writeUInt32LE(spans, p);
  return out.subarray(0, size);
}

/** Runs of own bytes shorter than this stay own (a span costs 12 bytes and a copy call per read). */
export const MIN_DICTIONARY_BYTES = 24;
/** A span's source field with this bit set: a start in {@link DICTIONARY}, not in the JSON. */
const FROM_DICTIONARY = 0x80000000;
/** The own bytes of the first kept message of each key (message type) are added, up to this many. */
const DICTIONARY_PER_KEY = 2048;
/**
 * Own bytes every kept message may share (issue 32's memory goal): a message's own bytes (tags,
 * lengths, numbers, short strings) are mostly the same from one object of a type to the next
 * (defaults, tolerations, field layout), so the first kept message of each type is copied here
 * once (process lifetime, append-only, never moved: spans into it stay valid) and later
 * messages' runs of at least {@link MIN_DICTIONARY_BYTES} found in it are spans of it.
 */
const DICTIONARY = Buffer.alloc(128 * 1024);
let dictionaryUsed = 0;
const dictionaryKeys = new Set<string>();
/** Hash chains over the dictionary's 4-byte windows: the last position per hash, then the one before. */
const HASH_BITS = 14;
const chainHead = new Int32Array(1 << HASH_BITS).fill(-1);
const chainPrev = new Int32Array(DICTIONARY.length);
/** Candidates tried per position (the longest run wins). */
const MAX_CHAIN = 8;
/**
 * Own bytes searched for dictionary runs per message, from its start: a search costs up to
 * {@link MAX_CHAIN} × 23 byte compares per own byte (a Secret's 900 KB of bytes data made of
 * 23-byte runs of a 2 KB first Secret took 80–110 ms against 2–4 ms without, issue 32's attack
 * round), and a type's dictionary holds at most {@link DICTIONARY_PER_KEY} bytes of it. Every
 * object of the bench (and almost every object) is far below.
 */
export const MAX_DICTIONARY_SEARCH = 64 * 1024;

/** The dictionary's filled part (a view: tests read what entered it). */
export function dictionaryBytes(): Buffer {
  return DICTIONARY.subarray(0, dictionaryUsed);
}

function hash4(b: Buffer, p: number): number {
  return (
    Math.imul(b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24), 0x9e3779b1) >>>
    (32 - HASH_BITS)
  );
}

/** Adds `own[from, to)` (at most {@link DICTIONARY_PER_KEY} bytes) to the dictionary, once per `key`. */
function addToDictionary(key: string, own: Buffer, from: number, to: number): void {
  if (dictionaryKeys.has(key)) return;
  dictionaryKeys.add(key);
  const len = Math.min(to - from, DICTIONARY_PER_KEY, DICTIONARY.length - dictionaryUsed);
  if (len < MIN_DICTIONARY_BYTES) return;
  const start = dictionaryUsed;
  own.copy(DICTIONARY, start, from, from + len);
  dictionaryUsed += len;
  for (let p = start; p + 4 <= dictionaryUsed; p++) {
    const h = hash4(DICTIONARY, p);
    chainPrev[p] = chainHead[h]!;
    chainHead[h] = p;
  }
}

/** Dictionary runs found: `[position in own, dictionary start, length]` triples (reused). */
const runs: number[] = [];

/**
 * Finds the dictionary runs of `own[from, to)` (appended to {@link runs}), greedily: at each
 * position the longest run of at least {@link MIN_DICTIONARY_BYTES} among the last
 * {@link MAX_CHAIN} dictionary positions with the same first 4 bytes, else the next position.
 */
function findRuns(own: Buffer, from: number, to: number): void {
  let p = from;
  while (p + MIN_DICTIONARY_BYTES <= to) {
    let best = 0;
    let bestAt = 0;
    let tries = MAX_CHAIN;
    for (let c = chainHead[hash4(own, p)]!; c >= 0 && tries-- > 0; c = chainPrev[c]!) {
      const max = Math.min(to - p, dictionaryUsed - c);
      let n = 0;
      while (n < max && own[p + n] === DICTIONARY[c + n]) n++;
      if (n > best) {
        best = n;
        bestAt = c;
      }
    }
    if (best >= MIN_DICTIONARY_BYTES) {
      runs.push(p, bestAt, best);
      p += best;
    } else p++;
  }
}

/** Scratch for {@link withDictionary}'s result. */
let scratch2 = Buffer.allocUnsafeSlow(64 * 1024);

/**
 * The kept form of `own` (`ownLen` bytes, its string spans `found`: `[at, jsonStart, length]`)
 * with its runs found in the dictionary (after the first message of `key` is added to it) left
 * out as spans too. Runs never cross a string span's place nor the list item field's prefix
 * (read by {@link fieldPrefixLength}), and are searched in the first
 * {@link MAX_DICTIONARY_SEARCH} own bytes only. Returns a view of a scratch buffer.
 */
function withDictionary(own: Buffer, ownLen: number, found: number[], key: string): Buffer {
  const prefix = fieldPrefixLength(own);
  addToDictionary(key, own, prefix, ownLen);
  runs.length = 0;
  // Segments of own between string spans' places: runs are searched inside each.
  const records: number[] = [];
  let segStart = prefix;
  const searchEnd = prefix + MAX_DICTIONARY_SEARCH;
  for (let i = 0; i <= found.length; i += 3) {
    const segEnd = i < found.length ? found[i]! : ownLen;
    const first = runs.length;
    findRuns(own, segStart, Math.min(segEnd, searchEnd));
    for (let r = first; r < runs.length; r += 3)
      records.push(runs[r]!, runs[r + 1]! + FROM_DICTIONARY, runs[r + 2]!, 1);
    if (i < found.length) records.push(found[i]!, found[i + 1]!, found[i + 2]!, 0);
    segStart = segEnd;
  }
  let removed = 0;
  for (let r = 0; r < runs.length; r += 3) removed += runs[r + 2]!;
  const spans = records.length / 4;
  const newOwn = ownLen - removed;
  const size = newOwn + spans * SPAN + 4;
  if (scratch2.length < size) scratch2 = Buffer.allocUnsafeSlow(Math.max(size, scratch2.length * 2));
  const out = scratch2;
  let o = 0; // read position in own
  let to = 0; // write position in out
  let p = newOwn;
  for (let r = 0; r < records.length; r += 4) {
    const at = records[r]!;
    const len = records[r + 2]!;
    to += own.copy(out, to, o, at);
    o = at;
    out.writeUInt32LE(to, p);
    out.writeUInt32LE(records[r + 1]!, p + 4);
    out.writeUInt32LE(len, p + 8);
    p += SPAN;
    if (records[r + 3] === 1) o += len; // a dictionary run: its own bytes left out
  }
  to += own.copy(out, to, o, ownLen);
  out.writeUInt32LE(spans, p);
  return out.subarray(0, size);
}

/** The source of a span with source field `src`: the dictionary or `json` (the start is {@link sourceStart}). */
function sourceOf(src: number, json: Buffer): Buffer {
  return src >= FROM_DICTIONARY ? DICTIONARY : json;
}

/** Where a span with source field `src` starts in its source ({@link sourceOf}), `jsonAt` the JSON's offset. */
function sourceStart(src: number, jsonAt: number): number {
  return src >= FROM_DICTIONARY ? src - FROM_DICTIONARY : jsonAt + src;
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
    const src = u32(k, rec + 4);
    const js = sourceStart(src, jsonAt);
    const len = u32(k, rec + 8);
    if (to <= pos) return at;
    if (from < pos + len)
      at += sourceOf(src, json).copy(target, at, js + Math.max(from - pos, 0), js + Math.min(to - pos, len));
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
    const src = u32(k, rec + 4);
    const js = sourceStart(src, jsonAt);
    at += sourceOf(src, json).copy(target, at, js, js + u32(k, rec + 8));
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
    const src = u32(buf, rec + 4);
    const js = sourceStart(src, jsonAt);
    at += sourceOf(src, json).copy(target, at, js, js + u32(buf, rec + 8));
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
