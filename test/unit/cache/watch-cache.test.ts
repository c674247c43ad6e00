import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  everythingFields,
  everythingLabels,
  parseFieldSelector,
  parseLabelSelector,
} from '../../../src/apimachinery/selectors.ts';
import { StatusError } from '../../../src/apimachinery/status.ts';
import { encodeList, WatchCache, type WatchCacheOptions } from '../../../src/cache/watch-cache.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { drain, PODS, pod, summary } from './helpers.ts';

const ALL = { labelSelector: everythingLabels, fieldSelector: everythingFields };

function newCache(opts: Partial<WatchCacheOptions> = {}) {
  const clock = new FakeClock();
  const cache = new WatchCache({ resource: PODS, clock, ...opts });
  return { clock, cache };
}

/** A synced cache at RV 10 holding a/p1 (app=web, node n1), a/p2 (app=db), b/p3 (app=web, node n2). */
function seeded(opts: Partial<WatchCacheOptions> = {}) {
  const c = newCache(opts);
  c.cache.replace(
    [
      pod('b', 'p3', 8, { labels: { app: 'web' }, nodeName: 'n2' }),
      pod('a', 'p1', 5, { labels: { app: 'web' }, nodeName: 'n1' }),
      pod('a', 'p2', 7, { labels: { app: 'db' } }),
    ],
    '10',
  );
  return c;
}

function names(items: Buffer[]): string[] {
  return items.map((b) => {
    const o = JSON.parse(String(b)) as { metadata: { namespace: string; name: string } };
    return `${o.metadata.namespace}/${o.metadata.name}`;
  });
}

function statusCode(fn: () => unknown): number {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof StatusError);
    return e.code;
  }
  assert.fail('did not throw');
}

describe('WatchCache readiness', () => {
  it('refuses reads before the first snapshot with 429 "storage is (re)initializing"', async () => {
    const { cache, clock } = newCache();
    assert.equal(cache.isSynced(), false);
    assert.equal(cache.resourceVersion(), 0n);
    assert.equal(
      statusCode(() => cache.list(ALL)),
      429,
    );
    assert.equal(
      statusCode(() => cache.get('a', 'p1')),
      429,
    );
    try {
      cache.watch(ALL);
      assert.fail('watch on an unsynced cache');
    } catch (e) {
      assert.ok(e instanceof StatusError);
      assert.equal(e.message, 'storage is (re)initializing');
      assert.equal(e.status.details?.retryAfterSeconds, 1);
    }
    const timedOut = cache.waitSynced(1000);
    await clock.step(1000);
    assert.equal(await timedOut, false);
    const synced = cache.waitSynced(1000);
    cache.replace([], '3');
    assert.equal(await synced, true);
    assert.equal(cache.isSynced(), true);
    assert.equal(clock.pending(), 0);
  });

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

  it('records the reflector liveness', () => {
    const { cache } = seeded();
    assert.equal(cache.isLive(), false);
    cache.setLive(true);
    assert.equal(cache.isLive(), true);
  });
});

describe('WatchCache list/get', () => {
  it('lists in key order, without kind/apiVersion, filtered by namespace and selectors', () => {
    const { cache } = seeded();
    const all = cache.list(ALL);
    assert.equal(all.resourceVersion, '10');
    assert.deepEqual(names(all.items), ['a/p1', 'a/p2', 'b/p3']);
    assert.equal(
      String(all.items[0]),
      '{"metadata":{"name":"p1","namespace":"a","resourceVersion":"5","labels":{"app":"web"}},"spec":{"nodeName":"n1"},"status":{}}',
    );
    // computed once per object, then shared
    assert.equal(cache.list(ALL).items[0], all.items[0]);
    assert.deepEqual(names(cache.list({ ...ALL, namespace: 'a' }).items), ['a/p1', 'a/p2']);
    assert.deepEqual(names(cache.list({ ...ALL, namespace: 'zz' }).items), []);
    const web = { labelSelector: parseLabelSelector('app=web'), fieldSelector: everythingFields };
    assert.deepEqual(names(cache.list(web).items), ['a/p1', 'b/p3']);
    const onN2 = {
      labelSelector: everythingLabels,
      fieldSelector: parseFieldSelector('spec.nodeName=n2', PODS)!,
    };
    assert.deepEqual(names(cache.list(onN2).items), ['b/p3']);
    const unscheduled = {
      labelSelector: everythingLabels,
      fieldSelector: parseFieldSelector('spec.nodeName=', PODS)!,
    };
    assert.deepEqual(names(cache.list(unscheduled).items), ['a/p2']);
    const byName = { ...ALL, namespace: 'a', fieldSelector: parseFieldSelector('metadata.name=p2', PODS)! };
    assert.deepEqual(names(cache.list(byName).items), ['a/p2']);
    const notOnN1 = { ...ALL, fieldSelector: parseFieldSelector('spec.nodeName!=n1', PODS)! };
    assert.deepEqual(names(cache.list(notOnN1).items), ['a/p2', 'b/p3']);
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

  it('gets one object with its verbatim bytes', () => {
    const { cache } = seeded();
    const p = pod('a', 'p1', 5, { labels: { app: 'web' }, nodeName: 'n1' });
    assert.deepEqual(cache.get('a', 'p1')?.raw, p.raw);
    assert.equal(cache.get('a', 'nope'), undefined);
    assert.equal(cache.get('b', 'p1'), undefined);
  });

  it('serves resourceVersionMatch=Exact inside the window as the snapshot at that RV', () => {
    const { cache } = seeded();
    cache.add(pod('a', 'p4', 11));
    cache.update(pod('a', 'p1', 12, { labels: { app: 'db' } }));
    cache.delete(pod('a', 'p2', 13));
    cache.update(pod('a', 'p1', 14, { labels: { app: 'x' } }));
    const at = (rv: bigint) => {
      const r = cache.list({ ...ALL, exactRV: rv });
      return `${r.resourceVersion}: ${r.items
        .map((b) => JSON.parse(String(b)).metadata)
        .map((m: { name: string; resourceVersion: string }) => `${m.name}@${m.resourceVersion}`)
        .join(' ')}`;
    };
    assert.equal(at(10n), '10: p1@5 p2@7 p3@8');
    assert.equal(at(11n), '11: p1@5 p2@7 p4@11 p3@8');
    assert.equal(at(12n), '12: p1@12 p2@7 p4@11 p3@8');
    assert.equal(at(13n), '13: p1@12 p4@11 p3@8');
    assert.equal(at(14n), '14: p1@14 p4@11 p3@8');
    const web = cache.list({
      labelSelector: parseLabelSelector('app=web'),
      fieldSelector: everythingFields,
      exactRV: 11n,
    });
    assert.deepEqual(names(web.items), ['a/p1', 'b/p3']);
    assert.equal(
      statusCode(() => cache.list({ ...ALL, exactRV: 9n })),
      410,
    );
    assert.equal(
      statusCode(() => cache.list({ ...ALL, exactRV: 15n })),
      410,
    );
  });

  it('encodes a LIST body like the apiserver', () => {
    const { cache } = seeded();
    const body = Buffer.concat(encodeList(PODS, cache.list({ ...ALL, namespace: 'b' }))).toString();
    assert.equal(
      body,
      '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"p3","namespace":"b","resourceVersion":"8","labels":{"app":"web"}},"spec":{"nodeName":"n2"},"status":{}}]}\n',
    );
    const empty = Buffer.concat(encodeList(PODS, cache.list({ ...ALL, namespace: 'zz' }))).toString();
    assert.equal(
      empty,
      '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[]}\n',
    );
  });
});

describe('WatchCache watch', () => {
  it('RV unset: synthetic ADDED for the filtered snapshot in key order, then live events', () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, labelSelector: parseLabelSelector('app=web') });
    assert.deepEqual(summary(drain(w)), ['ADDED p1@5', 'ADDED p3@8']);
    cache.add(pod('a', 'p4', 11, { labels: { app: 'web' } }));
    cache.add(pod('a', 'p5', 12, { labels: { app: 'db' } }));
    assert.deepEqual(summary(drain(w)), ['ADDED p4@11']);
    assert.equal(cache.stats().watchers, 1);
    w.close();
    assert.equal(w.closed, true);
    assert.equal(w.closeReason, 'client');
    assert.equal(cache.stats().watchers, 0);
  });

  it('sendInitialEvents=false with RV unset starts from now without initial events', () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, sendInitialEvents: false });
    assert.deepEqual(drain(w), []);
    cache.delete(pod('a', 'p1', 11, { labels: { app: 'web' } }));
    assert.deepEqual(summary(drain(w)), ['DELETED p1@11']);
  });

  it('RV=N resumes strictly after N, each RV once, in order; exact wire bytes', () => {
    const { cache } = seeded();
    const p4 = pod('a', 'p4', 11);
    cache.add(p4);
    cache.update(pod('a', 'p4', 12, { phase: 'Running' }));
    cache.delete(pod('a', 'p4', 13, { phase: 'Running' }));
    const w = cache.watch({ ...ALL, resourceVersion: 11n });
    const lines = drain(w);
    assert.deepEqual(summary(lines), ['MODIFIED p4@12', 'DELETED p4@13']);
    assert.equal(
      lines[0],
      '{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p4","namespace":"a","resourceVersion":"12"},"spec":{},"status":{"phase":"Running"}}}\n',
    );
    const fromStart = cache.watch({ ...ALL, resourceVersion: 10n });
    assert.deepEqual(summary(drain(fromStart)), ['ADDED p4@11', 'MODIFIED p4@12', 'DELETED p4@13']);
    cache.add(pod('a', 'p5', 14));
    assert.deepEqual(summary(drain(w)), ['ADDED p5@14']);
    assert.deepEqual(summary(drain(fromStart)), ['ADDED p5@14']);
  });

  it('shares one encoded line between watchers', () => {
    const { cache } = seeded();
    const w1 = cache.watch({ ...ALL, resourceVersion: 10n });
    const w2 = cache.watch({ ...ALL, resourceVersion: 10n, namespace: 'a' });
    cache.add(pod('a', 'p4', 11));
    const [c1] = [w1.stream.read() as Buffer];
    const [c2] = [w2.stream.read() as Buffer];
    assert.equal(c1, c2);
  });

  it('RV below the window: one ERROR event with Status 410 Expired, then the stream ends', async () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, resourceVersion: 9n });
    assert.equal(w.closed, true);
    assert.equal(w.closeReason, 'expired');
    assert.deepEqual(drain(w), [
      '{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 9 (10)","reason":"Expired","code":410}}\n',
    ]);
    await new Promise((r) => setImmediate(r));
    assert.equal(w.stream.readableEnded, true);
    assert.equal(cache.stats().watchers, 0);
  });

  it('RV above the current one: accepted, only events after it', () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, resourceVersion: 12n });
    cache.add(pod('a', 'p4', 11));
    cache.add(pod('a', 'p5', 12));
    cache.add(pod('a', 'p6', 13));
    assert.deepEqual(summary(drain(w)), ['ADDED p6@13']);
  });

  it('sendInitialEvents=true: ADDED, the initial-events-end BOOKMARK, then live', () => {
    const { cache } = seeded();
    const w = cache.watch({
      ...ALL,
      namespace: 'b',
      sendInitialEvents: true,
      allowWatchBookmarks: true,
      resourceVersion: 0n,
    });
    const lines = drain(w);
    assert.deepEqual(summary(lines), ['ADDED p3@8', 'BOOKMARK @10']);
    assert.equal(
      lines[1],
      '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"10","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}}\n',
    );
    cache.add(pod('b', 'p9', 11));
    assert.deepEqual(summary(drain(w)), ['ADDED p9@11']);
  });

  it('label selector transitions: into the selector → ADDED, out of it → DELETED with the previous object at the new RV', () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, labelSelector: parseLabelSelector('app=web'), resourceVersion: 10n });
    cache.update(pod('a', 'p2', 11, { labels: { app: 'web' } }));
    cache.update(pod('a', 'p2', 12, { labels: { app: 'web', v: '2' } }));
    cache.update(pod('a', 'p2', 13, { labels: { app: 'db' } }));
    cache.update(pod('a', 'p2', 14, { labels: { app: 'db', v: '3' } }));
    cache.delete(pod('a', 'p1', 15, { labels: { app: 'web' }, nodeName: 'n1' }));
    const lines = drain(w);
    assert.deepEqual(summary(lines), ['ADDED p2@11', 'MODIFIED p2@12', 'DELETED p2@13', 'DELETED p1@15']);
    assert.equal(
      lines[2],
      '{"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p2","namespace":"a","resourceVersion":"13","labels":{"app":"web","v":"2"}},"spec":{},"status":{}}}\n',
    );
    // The same transitions replayed from history.
    const replay = cache.watch({
      ...ALL,
      labelSelector: parseLabelSelector('app=web'),
      resourceVersion: 10n,
    });
    assert.deepEqual(drain(replay), lines);
  });

  it('field selector transitions on spec.nodeName', () => {
    const { cache } = seeded();
    const w = cache.watch({
      ...ALL,
      fieldSelector: parseFieldSelector('spec.nodeName=n1', PODS)!,
      resourceVersion: 10n,
    });
    cache.update(pod('a', 'p2', 11, { nodeName: 'n1' }));
    cache.update(pod('a', 'p1', 12, { labels: { app: 'web' }, nodeName: 'n3' }));
    assert.deepEqual(summary(drain(w)), ['ADDED p2@11', 'DELETED p1@12']);
  });

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
});

describe('WatchCache fan-out and relist', () => {
  it('closes a watcher whose buffer is full without affecting the others', async () => {
    let dispatched = 0;
    let terminated = 0;
    const { cache } = seeded({
      watcherBufferEvents: 3,
      onEventDispatched: () => dispatched++,
      onWatcherTerminated: () => terminated++,
    });
    const stalled = cache.watch({ ...ALL, resourceVersion: 10n });
    const reader = cache.watch({ ...ALL, resourceVersion: 10n });
    const got: string[] = [];
    for (let i = 0; i < 50; i++) {
      cache.add(pod('c', `q${i}`, 11 + i));
      got.push(...summary(drain(reader)));
    }
    assert.equal(got.length, 50);
    assert.deepEqual(got.slice(0, 2), ['ADDED q0@11', 'ADDED q1@12']);
    assert.equal(stalled.closed, true);
    assert.equal(stalled.closeReason, 'overflow');
    assert.equal(reader.closed, false);
    assert.equal(cache.stats().watchers, 1);
    assert.equal(dispatched, 50);
    assert.equal(terminated, 1);
    assert.equal(cache.stats().terminatedWatchers, 1);
    // Nothing was handed to the stalled stream: it just ends, and its client resumes by RV.
    assert.deepEqual(drain(stalled), []);
    await new Promise((r) => setImmediate(r));
    assert.equal(stalled.stream.readableEnded, true);
  });

  it('a slow reader keeps its stream buffer bounded and resumes reading', () => {
    const { cache } = seeded({ watcherBufferEvents: 100 });
    const w = cache.watch({ ...ALL, resourceVersion: 10n });
    drain(w);
    for (let i = 0; i < 60; i++) cache.add(pod('c', `q${i}`, 11 + i));
    assert.equal(w.closed, false);
    assert.equal(w.stream.readableLength <= 16, true);
    assert.equal(summary(drain(w)).length, 60);
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
      bytes: pod('a', 'p1', 30).raw.length,
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
    });
    const old = cache.watch({ ...ALL, resourceVersion: 11n });
    assert.deepEqual(summary(drain(old)), ['ERROR @undefined']);
    assert.match(
      drain(cache.watch({ ...ALL, resourceVersion: 11n }))[0]!,
      /too old resource version: 11 \(40\)/,
    );
    assert.deepEqual(drain(cache.watch({ ...ALL, resourceVersion: 40n })), []);
  });

  it('close() ends all watchers and their bookmark timers', () => {
    const { cache, clock } = seeded();
    const w = cache.watch({ ...ALL, allowWatchBookmarks: true });
    assert.equal(clock.pending(), 1);
    cache.close();
    assert.equal(w.closeReason, 'shutdown');
    assert.equal(clock.pending(), 0);
  });

  it('the client destroying its stream unregisters the watcher', async () => {
    const { cache } = seeded();
    const w = cache.watch(ALL);
    w.stream.destroy();
    await new Promise((r) => setImmediate(r));
    assert.equal(w.closed, true);
    assert.equal(cache.stats().watchers, 0);
  });
});

describe('WatchCache history window', () => {
  it('keeps events younger than historyMinAgeMs, evicts older ones beyond historyMinEvents', async () => {
    const { cache, clock } = seeded({ historyMinAgeMs: 75_000, historyMinEvents: 2 });
    cache.add(pod('a', 'e1', 11));
    await clock.step(10_000);
    cache.add(pod('a', 'e2', 12));
    cache.add(pod('a', 'e3', 13));
    assert.equal(cache.stats().historyEvents, 3);
    assert.equal(cache.stats().oldestRV, '10');
    await clock.step(70_000);
    // e1 is now 80 s old and there are more than 2 events: it goes; the window starts at 12-1.
    cache.add(pod('a', 'e4', 14));
    assert.equal(cache.stats().historyEvents, 3);
    assert.equal(cache.stats().oldestRV, '11');
    assert.equal(cache.stats().oldestEventAgeMs, 70_000);
    assert.deepEqual(summary(drain(cache.watch({ ...ALL, resourceVersion: 11n }))), [
      'ADDED e2@12',
      'ADDED e3@13',
      'ADDED e4@14',
    ]);
    assert.match(
      drain(cache.watch({ ...ALL, resourceVersion: 10n }))[0]!,
      /too old resource version: 10 \(11\)/,
    );
  });

  it('caps events and bytes even when they are fresh', () => {
    const { cache } = seeded({ historyMaxEvents: 3 });
    for (let i = 0; i < 6; i++) cache.add(pod('a', `e${i}`, 11 + i));
    assert.equal(cache.stats().historyEvents, 3);
    assert.equal(cache.stats().oldestRV, '13');
    const lineBytes = '{"type":"ADDED","object":'.length + pod('a', 'e0', 11).raw.length + 2;
    const small = seeded({ historyMaxBytes: lineBytes * 2 }).cache;
    for (let i = 0; i < 5; i++) small.add(pod('a', `e${i}`, 11 + i));
    assert.equal(small.stats().historyEvents, 2);
    assert.equal(small.stats().historyBytes, lineBytes * 2);
  });

  it('a resuming watcher keeps its interval even if the ring evicts it meanwhile', () => {
    const { cache } = seeded({ historyMaxEvents: 2 });
    cache.add(pod('a', 'e1', 11));
    cache.add(pod('a', 'e2', 12));
    const w = cache.watch({ ...ALL, resourceVersion: 10n });
    cache.add(pod('a', 'e3', 13));
    cache.add(pod('a', 'e4', 14));
    assert.deepEqual(summary(drain(w)), ['ADDED e1@11', 'ADDED e2@12', 'ADDED e3@13', 'ADDED e4@14']);
  });
});
