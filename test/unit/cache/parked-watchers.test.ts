import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Parkable, ParkedWatchers } from '../../../src/cache/parked-watchers.ts';

/** A parked watcher that records its eviction. */
function parkable(name: string, evicted: string[]): Parkable {
  return { evictParked: () => evicted.push(name) };
}

describe('ParkedWatchers', () => {
  it('past the bound, closes the one parked the longest; a re-park counts as new', () => {
    const evicted: string[] = [];
    const p = new ParkedWatchers(2);
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => parkable(n, evicted)) as [
      Parkable,
      Parkable,
      Parkable,
      Parkable,
    ];
    p.park(a);
    p.park(b);
    p.park(a); // a resumed and parked again: now the newest
    p.park(c);
    assert.deepEqual(evicted, ['b']);
    p.unpark(a);
    p.park(d);
    assert.deepEqual(evicted, ['b']);
    p.park(parkable('e', evicted));
    assert.deepEqual(evicted, ['b', 'c']);
    assert.equal(p.size, 2);
  });

  it('0 disables parking', () => {
    const p = new ParkedWatchers(0);
    assert.equal(p.enabled, false);
    assert.throws(() => p.park(parkable('a', [])), /parking is disabled/);
  });

  it('defaults to 1000', () => {
    assert.equal(new ParkedWatchers().max, 1000);
  });
});
