/**
 * Large shared Buffers ("slabs") that hold the stored objects' bytes back to back (issue 12): a
 * Buffer of its own per object cost ~490 bytes besides its contents (its JSUint8Array and
 * JSArrayBuffer objects in V8's heap, the ArrayBuffer's backing-store record and malloc's
 * per-allocation overhead outside it) — more than a third of a 1.3 KB ConfigMap. An entry keeps
 * its {@link Slab} plus an offset and a length instead.
 *
 * Bytes are only ever appended to a slab, never overwritten or reused: a view handed to a
 * response being written stays valid for as long as it is held (it pins its slab's memory, as
 * any view does). Freed space is therefore only counted ({@link SlabArena.wasted}); a slab whose
 * objects are all released is no longer referenced by the arena and is collected with the last
 * view of it. Space is won back by compaction: the store moves the entries of slabs less than
 * half live to the current slab (`Store` calls {@link SlabArena.shouldCompact} after changes).
 * The arena holds no reference to full slabs, so bytes of an entry that is dropped without being
 * released (a snapshot that failed half-way) are still freed by the GC with the entry; only the
 * counters then over-count it as live.
 */

/** Size of the first slab of an arena; each next one doubles, up to {@link SLAB_MAX_BYTES}. */
export const SLAB_MIN_BYTES = 16 * 1024;
/** Largest slab. Objects above a quarter of it get a slab of their own (exact size). */
export const SLAB_MAX_BYTES = 1024 * 1024;
/** Compaction waits until at least this many bytes are wasted (small caches never compact). */
export const COMPACT_MIN_WASTE_BYTES = 4 * 1024 * 1024;
/** …and until the wasted bytes exceed this share of the bytes in use. */
export const COMPACT_WASTE_SHARE = 0.3;

/**
 * One slab: `buf[0, used)` allocated, of which `live` bytes belong to unreleased objects;
 * `owner`: its arena's (what the objects in it share: an entry reaches it through its slab
 * instead of a field of its own).
 */
export class Slab<O = undefined> {
  readonly buf: Buffer;
  readonly owner: O;
  used = 0;
  live = 0;

  constructor(bytes: number, owner: O) {
    // Memory of its own, not a slice of Node's shared pool.
    this.buf = Buffer.allocUnsafeSlow(bytes);
    this.owner = owner;
  }

  /** Whether compaction should move this slab's objects out (less than half of it live). */
  get sparse(): boolean {
    return this.live * 2 < this.used;
  }
}

/** The slabs of one store, with the counters that decide compaction; `owner` is each slab's. */
export class SlabArena<O = undefined> {
  readonly owner: O;
  #current: Slab<O> | undefined;
  #nextSize = SLAB_MIN_BYTES;
  /** Bytes allocated in slabs that still hold a live object (plus the current slab's used part). */
  #used = 0;
  /** Of {@link #used}, bytes of released objects. */
  #wasted = 0;
  /** {@link #wasted} right after the last compaction (what it could not move: history entries). */
  #wastedAfterCompaction = 0;

  constructor(...owner: O extends undefined ? [] : [O]) {
    this.owner = owner[0] as O;
  }

  /** Bytes allocated in slabs still in use (released objects included until their slab dies). */
  get used(): number {
    return this.#used;
  }

  /** Bytes of released objects still held in slabs that also hold live ones. */
  get wasted(): number {
    return this.#wasted;
  }

  /** The slab new objects go to (never moved out of by compaction). */
  get current(): Slab<O> | undefined {
    return this.#current;
  }

  /**
   * Copies `src[start, end)` into a slab, after `lead` bytes left for the caller to fill (the
   * `{` of a stripped LIST item); returns the slab, the copy ending at `slab.used`.
   */
  copy(src: Uint8Array, start: number, end: number, lead = 0): Slab<O> {
    const length = end - start + lead;
    const slab = this.#reserve(length);
    slab.buf.set(src.subarray(start, end), slab.used - length + lead);
    return slab;
  }

  #reserve(length: number): Slab<O> {
    let slab = this.#current;
    if (length > SLAB_MAX_BYTES / 4) {
      slab = new Slab(length, this.owner);
    } else if (!slab || slab.used + length > slab.buf.length) {
      this.#retire();
      while (this.#nextSize < length) this.#nextSize *= 2;
      slab = new Slab(this.#nextSize, this.owner);
      this.#nextSize = Math.min(SLAB_MAX_BYTES, this.#nextSize * 2);
      this.#current = slab;
    }
    slab.used += length;
    slab.live += length;
    this.#used += length;
    return slab;
  }

  /** The current slab is full: from now on it dies with its last live object. */
  #retire(): void {
    const old = this.#current;
    this.#current = undefined;
    if (old && old.live === 0) this.#dead(old);
  }

  /** Releases `length` bytes of `slab` (an object nobody stores any more). */
  release(slab: Slab<O>, length: number): void {
    slab.live -= length;
    this.#wasted += length;
    if (slab.live === 0 && slab !== this.#current) this.#dead(slab);
  }

  #dead(slab: Slab<O>): void {
    this.#used -= slab.used;
    this.#wasted -= slab.used;
  }

  /**
   * Whether enough is wasted to compact: at least {@link COMPACT_MIN_WASTE_BYTES}, more than
   * {@link COMPACT_WASTE_SHARE} of the bytes in use, and grown by that much since the last
   * compaction (whose leftovers are objects only the history holds, freed as it evicts them).
   */
  shouldCompact(): boolean {
    const w = this.#wasted;
    const min = Math.max(COMPACT_MIN_WASTE_BYTES, this.#used * COMPACT_WASTE_SHARE);
    return w > min && w - this.#wastedAfterCompaction > min / 2;
  }

  /** Records the end of a compaction pass. */
  compacted(): void {
    this.#wastedAfterCompaction = this.#wasted;
  }
}
