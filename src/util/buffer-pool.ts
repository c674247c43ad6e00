/**
 * Short-lived Buffers carved from shared blocks of {@link POOL_BYTES}, as Node's own pool does
 * for Buffers under 4 KiB (`Buffer.poolSize`), for the sizes it leaves to malloc one by one.
 *
 * Why (issue 32, RSS per cached JSON byte): a watch-list's initial events in protobuf are one new
 * frame each (~4.6 KB for a 5 KB pod), 10k per informer sync. Each was its own malloc; V8 frees
 * them only when a GC finds their Buffers dead, so thousands at a time sat in glibc's brk heap,
 * whose high-water mark stays resident (+11 MiB after five syncs of 10k bench pods, 0.2 per JSON
 * byte; bench/tools/protobuf-rows.ts). A block is {@link POOL_BYTES} ≥ the CLI's
 * `MALLOC_MMAP_THRESHOLD_` (128 KiB), so malloc maps it on its own and unmaps it once every
 * Buffer carved from it is collected.
 *
 * Only for Buffers that die soon (written to a socket and dropped): one kept Buffer pins its whole
 * block. A caller that knows when a Buffer is done with (a socket write's callback) hands it
 * back ({@link releaseTransient}): a block whose Buffers all came back is freed at once (its
 * ArrayBuffer detached), not at the next full GC. Left to the GC, a watch-list's dead frames
 * (their blocks promoted while they were being written) held ~7 MiB until then.
 */

/** Bytes of one block (256 KiB: twice the CLI's fixed mmap threshold). */
export const POOL_BYTES = 256 * 1024;
/** Larger Buffers are allocated on their own (an eighth of a block: a block holds at least 8). */
export const POOLED_MAX = POOL_BYTES / 8;

/** A block's Buffers not handed back yet; `retired` once a newer block is carved from. */
interface BlockState {
  out: number;
  retired: boolean;
}

const states = new WeakMap<ArrayBufferLike, BlockState>();
let block: Buffer | undefined;
let state: BlockState | undefined;
let used = 0;

/**
 * An uninitialised Buffer of `size` bytes (as `Buffer.allocUnsafe`): a view of the current block
 * when `size` ≤ {@link POOLED_MAX} (a new block when the rest is too short; offsets 8-byte
 * aligned, as Node's pool), else a Buffer of its own.
 */
export function allocTransient(size: number): Buffer {
  if (size > POOLED_MAX) return Buffer.allocUnsafe(size);
  if (!block || !state || POOL_BYTES - used < size) {
    if (block && state) {
      state.retired = true;
      if (state.out === 0) free(block.buffer);
    }
    block = Buffer.allocUnsafeSlow(POOL_BYTES);
    state = { out: 0, retired: false };
    states.set(block.buffer, state);
    used = 0;
  }
  const out = block.subarray(used, used + size);
  used += (size + 7) & ~7;
  state.out++;
  return out;
}

/** Whether `buf` came from {@link allocTransient}'s blocks (and may be handed back). */
export function isTransient(buf: Buffer): boolean {
  return states.has(buf.buffer);
}

/**
 * Hands back a Buffer of {@link allocTransient} nothing reads any more (a write's callback
 * fired: the socket is done with it): when it was its retired block's last, the block is freed
 * now. Every view of that block is then empty (length 0): hand back only what no one still
 * holds. Anything else is ignored.
 */
export function releaseTransient(buf: Buffer): void {
  const st = states.get(buf.buffer);
  if (!st || st.out === 0) return;
  st.out--;
  if (st.out === 0 && st.retired) free(buf.buffer);
}

let freed = 0;

/** Blocks freed at once so far, all of their Buffers handed back (a count for tests, not a metric). */
export function transientBlocksFreed(): number {
  return freed;
}

/** Frees a block's memory now: detaching its ArrayBuffer releases the backing store. */
function free(ab: ArrayBufferLike): void {
  states.delete(ab);
  if (ab instanceof ArrayBuffer && !ab.detached) {
    ab.transfer(0);
    freed++;
  }
}
