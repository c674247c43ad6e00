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
 * block.
 */

/** Bytes of one block (256 KiB: twice the CLI's fixed mmap threshold). */
export const POOL_BYTES = 256 * 1024;
/** Larger Buffers are allocated on their own (an eighth of a block: a block holds at least 8). */
export const POOLED_MAX = POOL_BYTES / 8;

let block: Buffer | undefined;
let used = 0;

/**
 * An uninitialised Buffer of `size` bytes (as `Buffer.allocUnsafe`): a view of the current block
 * when `size` ≤ {@link POOLED_MAX} (a new block when the rest is too short; offsets 8-byte
 * aligned, as Node's pool), else a Buffer of its own.
 */
export function allocTransient(size: number): Buffer {
  if (size > POOLED_MAX) return Buffer.allocUnsafe(size);
  if (!block || POOL_BYTES - used < size) {
    block = Buffer.allocUnsafeSlow(POOL_BYTES);
    used = 0;
  }
  const out = block.subarray(used, used + size);
  used += (size + 7) & ~7;
  return out;
}
