import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ALL, drain, newCache, pod, summary } from '../../support/watch-cache-fixtures.ts';

/** A cache synced at RV 50 (its window starts there) with a scripted prover. */
function restarted(answers: boolean[]) {
  const calls: Array<[bigint, bigint]> = [];
  const { cache } = newCache({
    gapProver: async (from, to) => {
      calls.push([from, to]);
      await new Promise((r) => setImmediate(r));
      return answers.shift() ?? false;
    },
  });
  cache.replace([pod('a', 'p1', 5), pod('a', 'p2', 7)], '50');
  return { cache, calls };
}

describe('WatchCache.extendWindowBack (cache/window-extension.ts)', () => {
  it('proved unchanged since N: the watch from N resumes (no 410) and gets the later events', async () => {
    const { cache, calls } = restarted([true]);
    // Two clients resuming at once share one proof.
    const [a, b] = await Promise.all([cache.extendWindowBack(40n), cache.extendWindowBack(45n)]);
    assert.deepEqual([a, b], [true, true]);
    assert.deepEqual(calls, [[40n, 50n]]);
    const w = cache.watch({ ...ALL, resourceVersion: 40n });
    cache.add(pod('a', 'p3', 51));
    assert.deepEqual(summary(drain(w)), ['ADDED p3@51']);
    assert.equal(cache.stats().oldestRV, '40');
    // Inside the window already: no request.
    assert.equal(await cache.extendWindowBack(42n), true);
    assert.equal(calls.length, 1);
  });

  it('not proved: the watch gets the 410 it got before, and RVs at or below N fail without asking again', async () => {
    const { cache, calls } = restarted([false, true]);
    assert.equal(await cache.extendWindowBack(40n), false);
    const w = cache.watch({ ...ALL, resourceVersion: 40n });
    assert.match(drain(w).join(''), /too old resource version: 40 \(50\)/);
    assert.equal(await cache.extendWindowBack(30n), false);
    assert.deepEqual(calls, [[40n, 50n]]);
    // A later RV may still be proved (an event between 40 and 45 is what failed the first).
    assert.equal(await cache.extendWindowBack(45n), true);
    assert.deepEqual(calls, [
      [40n, 50n],
      [45n, 50n],
    ]);
  });

  it('a relist during the proof discards it; without a prover or before the first snapshot: false', async () => {
    const { cache } = restarted([true]);
    const p = cache.extendWindowBack(40n);
    cache.replace([pod('a', 'p1', 5)], '60');
    assert.equal(await p, false);
    assert.equal(cache.stats().oldestRV, '60');
    const plain = newCache().cache;
    plain.replace([], '50');
    assert.equal(await plain.extendWindowBack(40n), false);
    assert.equal(await newCache({ gapProver: async () => true }).cache.extendWindowBack(1n), false);
  });

  it('attack: a client leaving during the proof does not make later resumes 410', async () => {
    const calls: Array<[bigint, bigint]> = [];
    const { cache } = newCache({
      // Like proveNoEventsBetween: an aborted proof answers false.
      gapProver: async (from, to, signal) => {
        calls.push([from, to]);
        await new Promise((r) => setImmediate(r));
        return !signal?.aborted;
      },
    });
    cache.replace([pod('a', 'p1', 5)], '50');
    const gone = new AbortController();
    const first = cache.extendWindowBack(40n, gone.signal);
    // A second client resumes at the same RV while the first one's proof is in flight.
    const second = cache.extendWindowBack(40n);
    gone.abort();
    assert.equal(await first, false);
    assert.equal(await second, true);
    assert.deepEqual(calls, [
      [40n, 50n],
      [40n, 50n],
    ]);
    assert.equal(cache.stats().oldestRV, '40');
  });
});
