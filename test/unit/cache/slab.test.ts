import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  COMPACT_MIN_WASTE_BYTES,
  SLAB_MAX_BYTES,
  SLAB_MIN_BYTES,
  SlabArena,
} from '../../../src/cache/slab.ts';

const bytes = (n: number, fill: number) => Buffer.alloc(n, fill);

describe('slab arena (issue 12: objects packed into shared slabs)', () => {
  it('packs copies back to back, with room for a leading byte, in slabs growing from 16 KiB', () => {
    const a = new SlabArena();
    const s1 = a.copy(bytes(10, 0x61), 0, 10);
    assert.equal(s1.buf.length, SLAB_MIN_BYTES);
    assert.equal(s1.used, 10);
    const s2 = a.copy(Buffer.from('xyz'), 1, 3, 1);
    assert.equal(s2, s1);
    assert.equal(s1.used, 13);
    assert.equal(s1.buf.subarray(11, 13).toString(), 'yz');
    assert.equal(a.used, 13);
    assert.equal(a.current, s1);
    // The next object that does not fit opens a slab twice as large.
    const s3 = a.copy(bytes(SLAB_MIN_BYTES, 0x62), 0, SLAB_MIN_BYTES);
    assert.notEqual(s3, s1);
    assert.equal(s3.buf.length, 2 * SLAB_MIN_BYTES);
    assert.equal(a.used, 13 + SLAB_MIN_BYTES);
  });

  it('an object above a quarter of the largest slab gets a slab of its own', () => {
    const a = new SlabArena();
    const small = a.copy(bytes(100, 1), 0, 100);
    const big = a.copy(bytes(SLAB_MAX_BYTES / 4 + 1, 2), 0, SLAB_MAX_BYTES / 4 + 1);
    assert.equal(big.buf.length, SLAB_MAX_BYTES / 4 + 1);
    assert.equal(a.current, small, 'the current slab stays the one small objects go to');
  });

  it('counts released bytes as wasted until their slab has no live object left', () => {
    const a = new SlabArena();
    const s1 = a.copy(bytes(SLAB_MIN_BYTES - 100, 1), 0, SLAB_MIN_BYTES - 100);
    a.copy(bytes(50, 2), 0, 50);
    a.copy(bytes(200, 3), 0, 200); // opens the second slab: the first is retired
    assert.notEqual(a.current, s1);
    a.release(s1, 50);
    assert.equal(a.wasted, 50);
    assert.equal(s1.live, SLAB_MIN_BYTES - 100);
    a.release(s1, SLAB_MIN_BYTES - 100);
    assert.equal(a.wasted, 0, 'a dead slab is not counted: the GC frees it with its last view');
    assert.equal(a.used, 200);
  });

  it('asks for compaction once enough is wasted, and not again until more is', () => {
    const a = new SlabArena();
    const slabs = [];
    for (let i = 0; i < 40; i++) slabs.push(a.copy(bytes(250_000, 1), 0, 250_000));
    assert.equal(a.shouldCompact(), false);
    // Half of the objects released: 5 MB wasted of 10 MB, above the 30 % share.
    for (let i = 0; i < 40; i += 2) a.release(slabs[i]!, 250_000);
    assert.ok(a.wasted >= COMPACT_MIN_WASTE_BYTES);
    assert.equal(a.shouldCompact(), true);
    a.compacted();
    assert.equal(a.shouldCompact(), false, 'what a pass could not move does not trigger the next one');
  });
});
