/**
 * A growable byte queue for stream parsers in tests: bytes pushed at the end, taken or skipped at
 * the front. Appending `Buffer.concat([all, chunk])` per read copies everything held on every read
 * (quadratic in a large event split across many reads); here the storage doubles when full and
 * the held bytes move to its front only then, so each byte is copied O(1) times on average.
 */
export class ByteBuffer {
  #buf: Buffer;
  #start = 0;
  #end = 0;
  /** Bytes copied into the storage so far (pushes and moves): for tests of this bound. */
  copied = 0;

  constructor(initialBytes = 16 * 1024) {
    this.#buf = Buffer.allocUnsafe(initialBytes);
  }

  /** Bytes held. */
  get length(): number {
    return this.#end - this.#start;
  }

  /** Appends a copy of `chunk`. */
  push(chunk: Uint8Array): void {
    if (this.#end + chunk.length > this.#buf.length) {
      const held = this.length;
      // Grow when more than half would be full after the move; else move within.
      const target =
        2 * (held + chunk.length) > this.#buf.length
          ? Buffer.allocUnsafe(Math.max(2 * this.#buf.length, 2 * (held + chunk.length)))
          : this.#buf;
      this.#buf.copy(target, 0, this.#start, this.#end);
      this.copied += held;
      this.#buf = target;
      this.#start = 0;
      this.#end = held;
    }
    this.#buf.set(chunk, this.#end);
    this.#end += chunk.length;
    this.copied += chunk.length;
  }

  /** The bytes held, as a view valid until the next {@link push}. */
  view(): Buffer {
    return this.#buf.subarray(this.#start, this.#end);
  }

  /** `Buffer.indexOf` within the bytes held (offsets relative to the front), -1 when absent. */
  indexOf(value: string | number, from = 0): number {
    return this.view().indexOf(value, from);
  }

  /** Removes the first `n` bytes and returns a copy of them. */
  take(n: number): Buffer {
    const out = Buffer.from(this.view().subarray(0, n));
    this.skip(n);
    return out;
  }

  /** Removes the first `n` bytes. */
  skip(n: number): void {
    this.#start = Math.min(this.#end, this.#start + n);
    if (this.#start === this.#end) this.#start = this.#end = 0;
  }
}
