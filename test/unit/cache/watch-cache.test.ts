import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { everythingLabels, parseFieldSelector } from '../../../src/apimachinery/selectors.ts';
import { CompactionFloor } from '../../../src/cache/compaction-floor.ts';
import { Store } from '../../../src/cache/store.ts';
import { WatchCache } from '../../../src/cache/watch-cache.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import {
  ALL,
  drain,
  names,
  newCache,
  PODS,
  pod,
  seeded,
  summary,
} from '../../support/watch-cache-fixtures.ts';

describe("WatchCache state and the reflector's sink", () => {
  it('waitUntilFresh resolves on an event or bookmark reaching the RV, false on timeout or abort', async () => {
    const { cache, clock } = seeded();
    assert.equal(await cache.waitUntilFresh(10n, 0), true);
    const byEvent = cache.waitUntilFresh(11n, 3000);
    const byBookmark = cache.waitUntilFresh(20n, 3000);
    const tooFar = cache.waitUntilFresh(99n, 3000);
    const ac = new AbortController();
    const aborted = cache.waitUntilFresh(99n, 3000, ac.signal);
    cache.add(pod('a', 'p4', 11));
    assert.equal(await byEvent, true);
    cache.bookmark('20');
    assert.equal(await byBookmark, true);
    assert.equal(cache.resourceVersion(), 20n);
    ac.abort();
    assert.equal(await aborted, false);
    await clock.step(3000);
    assert.equal(await tooFar, false);
    assert.equal(clock.pending(), 0);
  });

  it('compact (a watch-list snapshot as it arrives) keeps bytes and metadata only; replace reuses its entries, fields included', () => {
    const { cache } = newCache();
    const full = pod('a', 'p1', 5, { nodeName: 'n1' });
    const kept = cache.compact(full);
    assert.equal(String(kept.raw), String(full.raw));
    assert.deepEqual(Object.keys(kept.object), ['metadata']);
    assert.equal(kept.object.metadata.name, 'p1');
    assert.equal((kept.object as { spec?: unknown }).spec, undefined);
    cache.replace([kept, cache.compact(pod('a', 'p2', 6))], '7');
    const onN1 = {
      labelSelector: everythingLabels,
      fieldSelector: parseFieldSelector('spec.nodeName=n1', PODS)!,
    };
    assert.deepEqual(names(cache.list(onN1).items), ['a/p1']);
    assert.deepEqual(names(cache.list(ALL).items), ['a/p1', 'a/p2']);
  });

  it('records the reflector liveness', () => {
    const { cache } = seeded();
    assert.equal(cache.isLive(), false);
    cache.setLive(true);
    assert.equal(cache.isLive(), true);
  });

  it('keeps the nodeName index in step with updates and deletes', () => {
    const { cache } = seeded();
    const onN1 = {
      labelSelector: everythingLabels,
      fieldSelector: parseFieldSelector('spec.nodeName=n1', PODS)!,
    };
    cache.update(pod('a', 'p2', 11, { nodeName: 'n1' }));
    assert.deepEqual(names(cache.list(onN1).items), ['a/p1', 'a/p2']);
    cache.update(pod('a', 'p1', 12, { nodeName: 'n2' }));
    cache.delete(pod('a', 'p2', 13, { nodeName: 'n1' }));
    assert.deepEqual(names(cache.list(onN1).items), []);
    assert.equal(cache.stats().objects, 2);
  });

  it('a bookmark advances the RV without history: resuming there sends no phantom event', () => {
    const { cache } = seeded();
    cache.add(pod('a', 'p4', 11));
    cache.bookmark('20');
    assert.equal(cache.stats().historyEvents, 1);
    const w = cache.watch({ ...ALL, resourceVersion: 20n });
    assert.deepEqual(drain(w), []);
    cache.add(pod('a', 'p5', 21));
    assert.deepEqual(summary(drain(w)), ['ADDED p5@21']);
    assert.deepEqual(cache.list(ALL).resourceVersion, '21');
  });

  it('drops events whose RV does not increase', () => {
    const { cache } = seeded();
    cache.add(pod('a', 'p4', 11));
    cache.add(pod('a', 'p5', 11));
    cache.update(pod('a', 'p4', 9));
    assert.equal(cache.resourceVersion(), 11n);
    assert.deepEqual(names(cache.list(ALL).items), ['a/p1', 'a/p2', 'a/p4', 'b/p3']);
  });

  it('relist ends every watcher cleanly and restarts the window at the new RV', async () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, resourceVersion: 10n });
    cache.add(pod('a', 'p4', 11));
    cache.replace([pod('a', 'p1', 30)], '40');
    assert.equal(w.closed, true);
    assert.equal(w.closeReason, 'relist');
    // Events the client had not read yet are dropped: it resumes by RV (and gets 410).
    assert.deepEqual(drain(w), []);
    await new Promise((r) => setImmediate(r));
    assert.equal(w.stream.readableEnded, true);
    assert.deepEqual(cache.stats(), {
      objects: 1,
      bytes: new Store(PODS).entry(pod('a', 'p1', 30)).size,
      historyEvents: 0,
      historyBytes: 0,
      oldestRV: '40',
      currentRV: '40',
      watchers: 0,
      synced: true,
      live: false,
      oldestEventAgeMs: 0,
      oldestEventTimeMs: null,
      historyCapacity: 102_400,
      lastSyncTimeMs: 1_700_000_000_000,
      lastProgressTimeMs: 1_700_000_000_000,
      terminatedWatchers: 0,
      parkedWatchers: 0,
      restoredFromMs: null,
    });
    const old = cache.watch({ ...ALL, resourceVersion: 11n });
    assert.deepEqual(summary(drain(old)), ['ERROR @undefined']);
    assert.match(
      drain(cache.watch({ ...ALL, resourceVersion: 11n }))[0]!,
      /too old resource version: 11 \(40\)/,
    );
    assert.deepEqual(drain(cache.watch({ ...ALL, resourceVersion: 40n })), []);
  });

  it('issue 11 item 10: a replace() whose entry throws leaves the old store, window, watchers and synced flag', () => {
    const { cache } = seeded();
    cache.add(pod('a', 'p4', 11));
    const w = cache.watch({ ...ALL, resourceVersion: 10n });
    assert.deepEqual(summary(drain(w)), ['ADDED p4@11']);
    const before = cache.stats();
    const bad = pod('a', 'zz', 'not-a-number');
    assert.throws(() => cache.replace([pod('a', 'p1', 30), bad], '40'), /not a uint64/);
    assert.deepEqual(cache.stats(), before);
    assert.equal(w.closed, false);
    assert.deepEqual(names(cache.list(ALL).items), ['a/p1', 'a/p2', 'a/p4', 'b/p3']);
    assert.equal(cache.list(ALL).resourceVersion, '11');
    cache.add(pod('a', 'p5', 12));
    assert.deepEqual(summary(drain(w)), ['ADDED p5@12']);
    // Before the first snapshot: a throwing snapshot leaves the cache unsynced and empty.
    const fresh = newCache().cache;
    assert.throws(() => fresh.replace([pod('a', 'p1', 1), bad], '5'));
    assert.equal(fresh.isSynced(), false);
    assert.equal(fresh.stats().objects, 0);
  });

  it('issue 11 item 11: a relist that lands on the same RV keeps the watchers and the window', () => {
    const { cache } = seeded();
    cache.add(pod('a', 'p4', 11));
    const w = cache.watch({ ...ALL, resourceVersion: 10n });
    assert.deepEqual(summary(drain(w)), ['ADDED p4@11']);
    const snapshot = [
      pod('b', 'p3', 8, { labels: { app: 'web' }, nodeName: 'n2' }),
      pod('a', 'p1', 5, { labels: { app: 'web' }, nodeName: 'n1' }),
      pod('a', 'p2', 7, { labels: { app: 'db' } }),
      pod('a', 'p4', 11),
    ];
    cache.replace(snapshot, '11');
    assert.equal(w.closed, false);
    const s = cache.stats();
    assert.equal(s.historyEvents, 1);
    assert.equal(s.oldestRV, '10');
    // A client resuming from inside the window still gets its events, no 410.
    assert.deepEqual(summary(drain(cache.watch({ ...ALL, resourceVersion: 10n }))), ['ADDED p4@11']);
    assert.equal(cache.list({ ...ALL, exactRV: 10n }).items.length, 3);
    cache.add(pod('a', 'p5', 12));
    assert.deepEqual(summary(drain(w)), ['ADDED p5@12']);
    // A relist at a different RV still ends them (the snapshots differ).
    cache.replace(snapshot, '20');
    assert.equal(w.closeReason, 'relist');
  });

  it('a relist at a later RV with exactly the stored objects (an apiserver restart, the resource quiet) keeps the watchers; the RV advances', () => {
    const { cache } = seeded();
    cache.add(pod('a', 'p4', 11));
    const w = cache.watch({ ...ALL, resourceVersion: 10n });
    assert.deepEqual(summary(drain(w)), ['ADDED p4@11']);
    const p1 = () => pod('a', 'p1', 5, { labels: { app: 'web' }, nodeName: 'n1' });
    const p2 = () => pod('a', 'p2', 7, { labels: { app: 'db' } });
    const p3 = () => pod('b', 'p3', 8, { labels: { app: 'web' }, nodeName: 'n2' });
    // Other resources moved etcd's revision to 25; nothing of this one changed.
    cache.replace([p3(), p1(), pod('a', 'p4', 11), p2()], '25');
    assert.equal(w.closed, false);
    assert.equal(cache.stats().currentRV, '25');
    assert.equal(cache.stats().oldestRV, '10');
    // A client resuming from before the relist still gets its events, no 410; live events flow.
    assert.deepEqual(summary(drain(cache.watch({ ...ALL, resourceVersion: 10n }))), ['ADDED p4@11']);
    cache.add(pod('a', 'p5', 26));
    assert.deepEqual(summary(drain(w)), ['ADDED p5@26']);
    // One object at another RV, one missing, or a repeated key: a changed snapshot, a relist.
    for (const changed of [
      [p1(), p2(), pod('b', 'p3', 9)],
      [p1(), p2()],
      [p1(), p2(), p2()],
    ]) {
      const { cache: c } = seeded();
      const cw = c.watch({ ...ALL, resourceVersion: 10n });
      c.replace(changed, '30');
      assert.equal(cw.closed, true);
      assert.equal(c.stats().oldestRV, '30');
    }
  });
});

describe('WatchCache with a compaction floor (cache/compaction-floor.ts)', () => {
  it('polls over its served window; compactedAt answers by the floor; close() stops it', async () => {
    const probes: bigint[] = [];
    const clock = new FakeClock();
    let cache: WatchCache | undefined;
    const compaction = new CompactionFloor({
      clock,
      window: () => cache?.servedWindow(),
      probe: async (rv) => {
        probes.push(rv);
        return rv < 53n ? 'compacted' : 'available';
      },
    });
    cache = new WatchCache({ resource: PODS, clock, compaction });
    assert.equal(cache.servedWindow(), undefined);
    cache.replace([pod('a', 'p1', 5)], '50');
    cache.add(pod('a', 'p2', 60));
    assert.deepEqual(cache.servedWindow(), { start: 50n, current: 60n });
    assert.equal(await cache.compactedAt(52n), true);
    assert.equal(await cache.compactedAt(53n), false);
    assert.equal(probes[0], 50n, 'the first probe at the window start');
    // The cache still serves the same RVs it did: the server decides with compactedAt.
    assert.deepEqual(names(cache.list({ ...ALL, exactRV: 52n }).items), ['a/p1']);
    assert.equal(clock.pending(), 1, 'polling while read');
    cache.close();
    assert.equal(clock.pending(), 0);
    // Without a floor nothing is compacted.
    assert.equal(await newCache().cache.compactedAt(1n), false);
  });
});

describe('WatchCache restored from a snapshot (docs/design.md §3, warm restart)', () => {
  const T = 1_700_000_000_000;
  /**
   * The old process stopped at T (its snapshot: synced at 20, one event b@21 recorded 4 s before
   * T); the new one restores at T + `downMs`, then the upstream's resumed watch delivers the
   * downtime's 150 events.
   */
  function restartAfter(downMs: number): { clock: FakeClock; cache: WatchCache } {
    const clock = new FakeClock(T + downMs);
    const cache = new WatchCache({ resource: PODS, clock });
    cache.restore(
      {
        resourceVersion: 21n,
        windowStart: 20n,
        objects: [pod('a', 'a', 10), pod('a', 'b', 21)],
        events: [{ type: 'MODIFIED', at: T - 4000, cur: pod('a', 'b', 21), prev: pod('a', 'b', 11) }],
      },
      T,
    );
    for (let i = 0; i < 150; i++) cache.add(pod('a', `c${i}`, 22 + i));
    return { clock, cache };
  }

  it('the downtime does not age the restored window: a client resumes from an RV it held before a 72 s restart', () => {
    // Old code: the restored event was 76 s old at the first append and evicted (the window
    // started at 21), so this client got ERROR 410 and relisted (the restart row's 10 of 50).
    const { cache } = restartAfter(72_000);
    assert.equal(cache.stats().historyEvents, 151);
    assert.equal(cache.stats().oldestRV, '20');
    const w = summary(drain(cache.watch({ ...ALL, resourceVersion: 20n })));
    assert.equal(w.length, 151);
    assert.deepEqual(w.slice(0, 2), ['MODIFIED b@21', 'ADDED c0@22']);
    // Its real age is still what the stats report.
    assert.equal(cache.stats().oldestEventAgeMs, 76_000);
  });

  it('restored events leave the window by age once the new process has run past minAgeMs', async () => {
    const { clock, cache } = restartAfter(72_000);
    await clock.step(71_001);
    cache.add(pod('a', 'd', 200));
    assert.equal(cache.stats().historyEvents, 151);
    assert.equal(cache.stats().oldestRV, '21');
    const w = summary(drain(cache.watch({ ...ALL, resourceVersion: 20n })));
    assert.equal(w.length, 1);
    assert.match(w[0]!, /^ERROR/);
  });
});
