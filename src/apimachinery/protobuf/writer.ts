/**
 * A protobuf wire writer that writes backwards, from the end of its buffer towards the start, as
 * gogo-protobuf's generated `MarshalToSizedBuffer` does (`k8s.io/api/…/generated.pb.go`): a
 * message's fields are written last field first, and a length-delimited field's length is known
 * when its contents are done, so nothing is measured twice and nothing is moved. The buffer
 * doubles when full (the bytes written so far move to the end of the new one).
 */

/** Wire types (protobuf encoding spec). */
export const VARINT = 0;
export const FIXED64 = 1;
export const LEN = 2;
export const FIXED32 = 5;

/**
 * The writer: call the field writers last field first, each value before its tag; a
 * length-delimited field is `mark = written`, its contents, `lengthSince(mark)`, `tag(n, LEN)`.
 * {@link view} is the message. Never throws (grows as needed).
 */
export class BackwardWriter {
  #buf: Buffer;
  /** Where the written bytes start: `#buf[#pos, #buf.length)`. */
  #pos: number;
  /**
   * Long strings written (see {@link recordStrings}): pairs of (bytes written after the string's
   * bytes, its byte length), last written first; undefined while not recording.
   */
  #strings: number[] | undefined;
  #minString = 0;

  /** `initial`: the first buffer's size in bytes. */
  constructor(initial = 4096) {
    this.#buf = Buffer.allocUnsafe(initial);
    this.#pos = initial;
  }

  /** How many bytes are written so far (a mark for {@link lengthSince}). */
  get written(): number {
    return this.#buf.length - this.#pos;
  }

  #room(n: number): void {
    if (this.#pos >= n) return;
    const used = this.written;
    let size = this.#buf.length * 2;
    while (size - used < n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.#buf.copy(next, size - used, this.#pos);
    this.#buf = next;
    this.#pos = size - used;
  }

  /** An unsigned varint of a non-negative safe integer. */
  uvarint(v: number): void {
    if (v < 0x80) {
      if (this.#pos < 1) this.#room(1);
      this.#buf[--this.#pos] = v;
      return;
    }
    if (v < 0x4000) {
      if (this.#pos < 2) this.#room(2);
      const b = this.#buf;
      const p = this.#pos - 2;
      b[p] = (v & 0x7f) | 0x80;
      b[p + 1] = v >>> 7;
      this.#pos = p;
      return;
    }
    if (v > Number.MAX_SAFE_INTEGER) {
      this.varint64(BigInt(v));
      return;
    }
    let n = 1;
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) n++;
    this.#room(n);
    const start = this.#pos - n;
    let x = v;
    for (let i = start; i < this.#pos; i++) {
      const low = x % 128;
      x = Math.floor(x / 128);
      this.#buf[i] = i === this.#pos - 1 ? low : low | 0x80;
    }
    this.#pos = start;
  }

  /**
   * A varint of a Go int32/int64/uint64 value cast to uint64 (`encodeVarintGenerated(uint64(v))`):
   * a negative value takes 10 bytes (two's complement).
   */
  varint64(v: number | bigint): void {
    if (typeof v === 'number' && v >= 0 && v <= Number.MAX_SAFE_INTEGER) {
      this.uvarint(v);
      return;
    }
    let x = BigInt.asUintN(64, BigInt(v));
    const bytes: number[] = [];
    do {
      const low = Number(x & 0x7fn);
      x >>= 7n;
      bytes.push(x > 0n ? low | 0x80 : low);
    } while (x > 0n);
    this.#room(bytes.length);
    this.#pos -= bytes.length;
    for (let i = 0; i < bytes.length; i++) this.#buf[this.#pos + i] = bytes[i]!;
  }

  /** A field key: `num << 3 | wire`. */
  tag(num: number, wire: number): void {
    const v = num * 8 + wire;
    if (v < 0x80 && this.#pos > 0) this.#buf[--this.#pos] = v;
    else this.uvarint(v);
  }

  /** Raw bytes. */
  raw(b: Uint8Array): void {
    this.#room(b.length);
    this.#pos -= b.length;
    this.#buf.set(b, this.#pos);
  }

  /**
   * A string's UTF-8 bytes and their length (no tag). A short ASCII string is copied by hand; any
   * other is encoded once, into room for its worst case (3 bytes per UTF-16 unit), then moved to
   * its place if shorter (no `Buffer.byteLength` pass before the write).
   */
  string(s: string): void {
    const len = s.length;
    if (len < 32) {
      if (this.#pos < len) this.#room(len);
      const b = this.#buf;
      const start = this.#pos - len;
      let i = 0;
      for (; i < len; i++) {
        const c = s.charCodeAt(i);
        if (c > 0x7f) break;
        b[start + i] = c;
      }
      if (i === len) {
        this.#pos = start;
        this.uvarint(len);
        return;
      }
    }
    const max = len * 3;
    this.#room(max);
    const start = this.#pos - max;
    const n = this.#buf.utf8Write(s, start, max);
    if (n < max) this.#buf.copyWithin(this.#pos - n, start, start + n);
    this.#pos -= n;
    if (this.#strings !== undefined && n >= this.#minString) this.#strings.push(this.written, n);
    this.uvarint(n);
  }

  /**
   * From now on notes where each string of at least `min` UTF-8 bytes (`min` ≥ 32) is written,
   * until {@link reset}: read them with {@link stringSpans}.
   */
  recordStrings(min: number): void {
    this.#strings = [];
    this.#minString = Math.max(32, min);
  }

  /**
   * The strings noted since {@link recordStrings}, as `[start, length]` pairs of byte offsets in
   * {@link view}, first in the message first; empty when not recording.
   */
  stringSpans(): number[] {
    const rec = this.#strings;
    if (rec === undefined) return [];
    const total = this.written;
    const out: number[] = [];
    for (let i = rec.length - 2; i >= 0; i -= 2) {
      if (rec[i]! > total) continue; // rewound past it
      out.push(total - rec[i]!, rec[i + 1]!);
    }
    return out;
  }

  /** A little-endian IEEE double (no tag). */
  double(v: number): void {
    this.#room(8);
    this.#pos -= 8;
    this.#buf.writeDoubleLE(v, this.#pos);
  }

  /** A little-endian IEEE float (no tag). */
  float(v: number): void {
    this.#room(4);
    this.#pos -= 4;
    this.#buf.writeFloatLE(v, this.#pos);
  }

  /** Writes the length of what was written since `mark` (a {@link written} value). */
  lengthSince(mark: number): void {
    this.uvarint(this.written - mark);
  }

  /** The bytes written (a view of the writer's buffer: copy before writing on). */
  view(): Buffer {
    return this.#buf.subarray(this.#pos);
  }

  /** Forgets what was written after `mark` (a {@link written} value). */
  rewind(mark: number): void {
    this.#pos = this.#buf.length - mark;
    if (this.#strings !== undefined) {
      const rec = this.#strings;
      while (rec.length > 0 && rec[rec.length - 2]! > mark) rec.length -= 2;
    }
  }

  /** Forgets what was written, and stops noting strings (the buffer is kept for the next message). */
  reset(): void {
    this.#pos = this.#buf.length;
    this.#strings = undefined;
  }
}

declare global {
  interface Buffer {
    /** Node's internal UTF-8 writer behind `buf.write(s, offset, length, 'utf8')`, without its argument parsing. */
    utf8Write(s: string, offset: number, length: number): number;
    /** Node's internal UTF-8 decoder behind `buf.toString('utf8', start, end)`, without its argument parsing. */
    utf8Slice(start: number, end: number): string;
  }
}
