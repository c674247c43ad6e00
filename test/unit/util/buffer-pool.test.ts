/** Short-lived Buffers carved from shared blocks (src/util/buffer-pool.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allocTransient,
  isTransient,
  POOL_BYTES,
  POOLED_MAX,
  releaseTransient,
} from '../../../src/util/buffer-pool.ts';

describe('allocTransient', () => {
  it('carves Buffers from one block, 8-byte aligned, without overlap', () => {
    const a = allocTransient(POOL_BYTES); // too big: its own; the next ones start a fresh block
    assert.equal(a.byteOffset, 0);
    assert.equal(a.buffer.byteLength, POOL_BYTES);
    const b = allocTransient(4621);
    const c = allocTransient(5);
    const d = allocTransient(4096);
    assert.equal(b.length, 4621);
    assert.equal(c.length, 5);
    assert.equal(b.buffer, c.buffer, 'the same block');
    assert.equal(c.buffer, d.buffer);
    assert.equal(b.buffer.byteLength, POOL_BYTES);
    assert.equal(c.byteOffset - b.byteOffset, 4624, '4621 rounded up to 8');
    assert.equal(d.byteOffset - c.byteOffset, 8);
    b.fill(1);
    c.fill(2);
    d.fill(3);
    assert.equal(b.at(-1), 1);
    assert.equal(c.at(0), 2);
  });
  it('starts a new block when the rest of the current one is too short', () => {
    let first = allocTransient(POOLED_MAX);
    while (first.byteOffset !== 0) first = allocTransient(POOLED_MAX); // a fresh block
    const views = [first];
    for (let i = 1; i < 8; i++) views.push(allocTransient(POOLED_MAX));
    assert.ok(
      views.every((v) => v.buffer === first.buffer),
      'eight of POOLED_MAX fill one block',
    );
    assert.equal(views[7]!.byteOffset + POOLED_MAX, POOL_BYTES);
    const next = allocTransient(1);
    assert.ok(next.buffer !== first.buffer, 'a new block');
    assert.equal(next.byteOffset, 0);
  });
  it('gives a Buffer of its own above POOLED_MAX', () => {
    const big = allocTransient(POOLED_MAX + 1);
    assert.equal(big.length, POOLED_MAX + 1);
    assert.equal(big.byteOffset, 0);
    assert.equal(big.buffer.byteLength >= POOLED_MAX + 1, true);
    assert.ok(big.buffer.byteLength !== POOL_BYTES);
  });
  it('frees a retired block once every Buffer carved from it is handed back, not before', () => {
    let a = allocTransient(POOLED_MAX);
    while (a.byteOffset !== 0) a = allocTransient(POOLED_MAX); // a fresh block
    const b = allocTransient(100);
    assert.ok(isTransient(a) && isTransient(b));
    releaseTransient(a);
    releaseTransient(b);
    assert.equal(
      (a.buffer as ArrayBuffer).detached,
      false,
      'the current block stays: more is carved from it',
    );
    const c = allocTransient(POOLED_MAX);
    assert.equal(c.buffer, a.buffer);
    for (let i = 0; i < 6; i++) allocTransient(POOLED_MAX); // fills it; the next starts another
    const d = allocTransient(8);
    assert.ok(d.buffer !== a.buffer);
    assert.equal((a.buffer as ArrayBuffer).detached, false, 'retired, but 7 of its Buffers are out');
    releaseTransient(c);
    assert.equal((a.buffer as ArrayBuffer).detached, false);
    releaseTransient(Buffer.from('not pooled')); // ignored
    assert.equal(isTransient(Buffer.allocUnsafe(10)), false);
    releaseTransient(d);
    assert.equal((d.buffer as ArrayBuffer).detached, false, 'the current block');
  });
  it('detaches the block when its last Buffer comes back after it was retired', () => {
    let first = allocTransient(POOLED_MAX);
    while (first.byteOffset !== 0) first = allocTransient(POOLED_MAX);
    const views = [first];
    for (let i = 1; i < 8; i++) views.push(allocTransient(POOLED_MAX));
    const next = allocTransient(1); // retires the full block
    for (const v of views.slice(0, 7)) releaseTransient(v);
    assert.equal((first.buffer as ArrayBuffer).detached, false);
    assert.equal(views[7]!.length, POOLED_MAX);
    releaseTransient(views[7]!);
    assert.equal((first.buffer as ArrayBuffer).detached, true, 'freed at once');
    assert.equal(views[7]!.length, 0);
    assert.equal(isTransient(views[7]!), false);
    releaseTransient(views[7]!); // a second hand-back is ignored
    assert.equal((next.buffer as ArrayBuffer).detached, false);
  });
});
