import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ALL, drain, pod, seeded, summary } from '../../support/watch-cache-fixtures.ts';

describe('WatchCache bookmarks and deadlines', () => {
  it('periodic bookmarks with the current RV when allowed', async () => {
    const { cache, clock } = seeded({ bookmarkIntervalMs: 60_000 });
    const w = cache.watch({ ...ALL, resourceVersion: 10n, allowWatchBookmarks: true });
    const quiet = cache.watch({ ...ALL, resourceVersion: 10n });
    await clock.step(59_999);
    assert.deepEqual(drain(w), []);
    cache.bookmark('15');
    await clock.step(1);
    assert.deepEqual(drain(w), [
      '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"15"},"spec":{"containers":null},"status":{}}}\n',
    ]);
    cache.add(pod('a', 'p4', 16));
    await clock.step(60_000);
    assert.deepEqual(summary(drain(w)), ['ADDED p4@16', 'BOOKMARK @16']);
    assert.deepEqual(summary(drain(quiet)), ['ADDED p4@16']);
    w.close();
    quiet.close();
    assert.equal(clock.pending(), 0);
  });

  it('timeoutMs: bookmarks every interval and 2 s before the deadline, then a clean end', async () => {
    const { cache, clock } = seeded({ bookmarkIntervalMs: 60_000 });
    const w = cache.watch({ ...ALL, resourceVersion: 10n, allowWatchBookmarks: true, timeoutMs: 150_000 });
    const plain = cache.watch({ ...ALL, resourceVersion: 10n, timeoutMs: 1_000 });
    cache.bookmark('12'); // the RV moved past the watch's start: timed bookmarks carry it
    const seen: string[] = [];
    for (const t of [60_000, 120_000, 147_999, 148_000, 149_999, 150_000]) {
      await clock.step(t - (seen.length ? Number(seen[seen.length - 1]!.split(' ')[0]) : 0));
      seen.push(`${t} ${summary(drain(w)).join(',')} ${w.closed}`);
    }
    assert.deepEqual(seen, [
      '60000 BOOKMARK @12 false',
      '120000 BOOKMARK @12 false',
      '147999  false',
      '148000 BOOKMARK @12 false',
      '149999  false',
      '150000  true',
    ]);
    assert.equal(w.closeReason, 'timeout');
    assert.equal(plain.closeReason, 'timeout');
    assert.equal(clock.pending(), 0);
  });

  it('attack: a quiet resource gets no timed bookmark at the RV the watch started from', async () => {
    // The apiserver v1.37.2 (`cache_watcher.go` `process`: only events above the watch's start RV,
    // a bookmark equal to it only before any bookmark was sent) sent a watch of a quiet resource
    // (`?watch=1&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=8`, and a watch-list)
    // its initial events and nothing more; the cache added a BOOKMARK at the same RV 2 s before
    // the timeout. Side by side on the fixture; a write during the watch gets one from both.
    const { cache, clock } = seeded({ bookmarkIntervalMs: 60_000 });
    cache.add(pod('a', 'p4', 11));
    const opts = { ...ALL, allowWatchBookmarks: true, timeoutMs: 8_000 };
    const fromZero = cache.watch({ ...opts, resourceVersion: 0n });
    const list = cache.watch({ ...opts, sendInitialEvents: true });
    const resumed = cache.watch({ ...opts, resourceVersion: 11n });
    const behind = cache.watch({ ...opts, resourceVersion: 10n }); // the history's p4@11 first
    const initial = [fromZero, list, resumed, behind].map((w) => summary(drain(w)));
    assert.deepEqual(initial[3], ['ADDED p4@11']);
    assert.ok(initial[1]!.at(-1)?.startsWith('BOOKMARK @11'), 'the watch-list ended its initial events');
    await clock.step(6_000);
    assert.deepEqual(
      [fromZero, list, resumed].map((w) => summary(drain(w))),
      [[], [], []],
      'no bookmark at the start RV',
    );
    assert.deepEqual(summary(drain(behind)), ['BOOKMARK @11'], 'above the RV it started from: sent');
    await clock.step(2_000);
    assert.equal(clock.pending(), 0);
  });
});
