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
    const seen: string[] = [];
    for (const t of [60_000, 120_000, 147_999, 148_000, 149_999, 150_000]) {
      await clock.step(t - (seen.length ? Number(seen[seen.length - 1]!.split(' ')[0]) : 0));
      seen.push(`${t} ${summary(drain(w)).join(',')} ${w.closed}`);
    }
    assert.deepEqual(seen, [
      '60000 BOOKMARK @10 false',
      '120000 BOOKMARK @10 false',
      '147999  false',
      '148000 BOOKMARK @10 false',
      '149999  false',
      '150000  true',
    ]);
    assert.equal(w.closeReason, 'timeout');
    assert.equal(plain.closeReason, 'timeout');
    assert.equal(clock.pending(), 0);
  });
});
