/** A seeded pseudo-random number generator for tests whose random writes must be replayable. */

/**
 * mulberry32: returns a function giving the next number in [0, 1) of the sequence `seed` starts.
 * Equal seeds give equal sequences (which worker draws which number still depends on timing
 * when several share one).
 */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
