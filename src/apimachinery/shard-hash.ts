/**
 * The hash of a shard selector (`shardSelector`, the ShardedListAndWatch feature): FNV-1a 64 of
 * a metadata value's UTF-8 bytes as 16 lowercase hex digits, and the hex comparison of range
 * bounds. Copied from apimachinery `pkg/sharding/hash.go` (`HashField`) and
 * `pkg/sharding/selector.go` (`HexLess`).
 */

const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

/** `sharding.HashField`: `fmt.Sprintf("%016x", fnv.New64a().Sum64())` of `value`. */
export function hashField(value: string): string {
  let h = FNV64_OFFSET;
  for (const b of Buffer.from(value, 'utf8')) {
    h ^= BigInt(b);
    h = (h * FNV64_PRIME) & MASK64;
  }
  return h.toString(16).padStart(16, '0');
}

/**
 * `sharding.HexLess`: two `0x`-prefixed lowercase hex strings of 16 digits (or the bound
 * `0x10000000000000000`, 17) compared numerically: the shorter is smaller, else byte order.
 */
export function hexLess(a: string, b: string): boolean {
  if (a.length !== b.length) return a.length < b.length;
  return a < b;
}
