import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FifoQueue } from '../../../src/cache/fifo-queue.ts';

describe('FifoQueue', () => {
  it('shifts in insertion order and indexes from the oldest item', () => {
    const q = new FifoQueue<number>();
    assert.equal(q.shift(), undefined);
    assert.equal(q.peek(), undefined);
    for (let i = 0; i < 5; i++) q.push(i);
    assert.equal(q.shift(), 0);
    assert.equal(q.length, 4);
    assert.equal(q.peek(), 1);
    assert.equal(q.at(0), 1);
    assert.equal(q.at(3), 4);
    assert.deepEqual(q.sliceFrom(2), [3, 4]);
    q.clear();
    assert.equal(q.length, 0);
    assert.equal(q.peek(), undefined);
  });

  it('keeps order and indexes across compactions of the shifted prefix', () => {
    const q = new FifoQueue<number>();
    let next = 0;
    let expected = 0;
    // Interleave pushes and shifts so the dead prefix passes the compaction threshold repeatedly.
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 3000; i++) q.push(next++);
      for (let i = 0; i < 2500; i++) assert.equal(q.shift(), expected++);
      assert.equal(q.length, next - expected);
      assert.equal(q.at(0), expected);
      assert.equal(q.at(q.length - 1), next - 1);
      assert.deepEqual(q.sliceFrom(q.length - 2), [next - 2, next - 1]);
    }
    while (q.length > 0) assert.equal(q.shift(), expected++);
    assert.equal(expected, next);
  });
});
