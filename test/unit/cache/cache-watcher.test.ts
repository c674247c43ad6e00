import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseLabelSelector } from '../../../src/apimachinery/label-selector.ts';
import type { KubeObject, UpstreamObject } from '../../../src/apimachinery/object.ts';
import type { Watcher } from '../../../src/cache/cache-watcher.ts';
import { ParkedWatchers } from '../../../src/cache/parked-watchers.ts';
import { WatchCache } from '../../../src/cache/watch-cache.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { ALL, drain, PODS, pod, seeded, summary } from '../../support/watch-cache-fixtures.ts';

describe('WatchCache fan-out', () => {
  it('without parking (--max-parked-watchers=0), closes a watcher whose buffer is full without affecting the others', async () => {
    let dispatched = 0;
    const terminated: string[] = [];
    const { cache } = seeded({
      watcherBufferEvents: 3,
      parkedWatchers: new ParkedWatchers(0),
      onEventDispatched: () => dispatched++,
      onWatcherTerminated: (reason) => terminated.push(reason),
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
    assert.deepEqual(terminated, ['unresponsive']);
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
});

/*
 * Found by attacking a real proxy: three watch clients that never read, then 300 updates of a
 * 700 KB ConfigMap, took the proxy from 153 MB to 488 MB RSS while the history stayed at its
 * 64 MiB cap — the per-watcher queue was bounded in events (1 000) only, so it could pin
 * 1 000 × 1.5 MiB. It is now also bounded in bytes (default 16 MiB).
 */
const MiB = 1024 * 1024;

function bigPod(name: string, rv: number): UpstreamObject {
  const object: KubeObject = {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { name, namespace: 'a', resourceVersion: String(rv), annotations: { big: 'x'.repeat(MiB) } },
    spec: {},
    status: {},
  };
  return { raw: Buffer.from(JSON.stringify(object)), object };
}

describe('attack: a watcher that never reads is bounded in bytes', () => {
  it('without parking, closes it (overflow) after 16 MiB of queued events, far below 1 000 events', () => {
    let terminated = 0;
    const cache = new WatchCache({
      resource: PODS,
      clock: new FakeClock(),
      parkedWatchers: new ParkedWatchers(0),
      onWatcherTerminated: () => terminated++,
    });
    cache.replace([pod('a', 'p1', 5)], '10');
    const stalled = cache.watch({ ...ALL, resourceVersion: 10n });
    const reader = cache.watch({ ...ALL, resourceVersion: 10n });
    let read = 0;
    for (let i = 0; i < 20; i++) {
      cache.update(bigPod('p1', 11 + i));
      read += summary(drain(reader)).length;
    }
    assert.equal(stalled.closed, true);
    assert.equal(stalled.closeReason, 'overflow');
    assert.equal(terminated, 1);
    assert.equal(reader.closed, false);
    assert.equal(read, 20);
  });

  it('with parking, parks it after 16 MiB of queued events: its queue is released', () => {
    // A history large enough to keep its position in the window (else it ends with a 410).
    const cache = new WatchCache({ resource: PODS, clock: new FakeClock(), historyMaxBytes: 256 * MiB });
    cache.replace([pod('a', 'p1', 5)], '10');
    const stalled = cache.watch({ ...ALL, resourceVersion: 10n }) as Watcher;
    for (let i = 0; i < 20; i++) cache.update(bigPod('p1', 11 + i));
    assert.equal(stalled.closed, false);
    assert.equal(stalled.parked, true);
    assert.equal(stalled.queued, 0);
    assert.equal(cache.stats().parkedWatchers, 1);
  });

  it('small events still queue up to the event cap', () => {
    const cache = new WatchCache({ resource: PODS, clock: new FakeClock() });
    cache.replace([], '10');
    const stalled = cache.watch({ ...ALL, resourceVersion: 10n });
    for (let i = 0; i < 500; i++) cache.add(pod('a', `p${i}`, 11 + i));
    assert.equal(stalled.closed, false);
  });
});

/** The JSON of each line. */
function events(
  lines: string[],
): { type: string; object: KubeObject & { code?: number; message?: string } }[] {
  return lines.map((l) => JSON.parse(l) as { type: string; object: KubeObject & { code?: number } });
}

/** Asserts RVs strictly increase and no object event repeats. */
function assertOnceInOrder(lines: string[]): void {
  let last = 0n;
  for (const e of events(lines)) {
    const rv = BigInt(e.object.metadata.resourceVersion ?? '0');
    assert.ok(rv > last, `RV ${rv} after ${last}`);
    last = rv;
  }
}

describe('parked watchers (KEP-6268 WatchCacheStallResume)', () => {
  it('a watcher whose queue is full is parked, holds no queue, and resumes from the history: every event once, in order', () => {
    const terminated: string[] = [];
    let parks = 0;
    const resumes: number[] = [];
    const { cache } = seeded({
      watcherBufferEvents: 3,
      onWatcherTerminated: (r) => terminated.push(r),
      onWatcherParked: () => parks++,
      onWatcherResumed: (catchupEvents) => resumes.push(catchupEvents),
    });
    const stalled = cache.watch({ ...ALL, resourceVersion: 10n }) as Watcher;
    const reader = cache.watch({ ...ALL, resourceVersion: 10n });
    const seen: string[] = [];
    for (let i = 0; i < 50; i++) {
      cache.add(pod('c', `q${i}`, 11 + i));
      seen.push(...drain(reader));
    }
    assert.equal(stalled.closed, false);
    assert.equal(stalled.parked, true);
    assert.equal(stalled.queued, 0);
    assert.equal(stalled.position, 10n);
    assert.equal(cache.stats().parkedWatchers, 1);
    assert.equal(parks, 1);
    // Its client reads again: the 50 events from the history, then live.
    const got = drain(stalled);
    assert.equal(stalled.parked, false);
    // One catch-up, of the 50 events it was behind (apiserver_watch_cache_watcher_catchup_events).
    assert.deepEqual(resumes, [50]);
    assert.equal(cache.stats().parkedWatchers, 0);
    cache.add(pod('c', 'live', 61));
    got.push(...drain(stalled));
    seen.push(...drain(reader));
    assert.equal(got.length, 51);
    assert.deepEqual(summary(got), summary(seen));
    assert.deepEqual(summary(got).slice(0, 2), ['ADDED q0@11', 'ADDED q1@12']);
    assert.equal(summary(got).at(-1), 'ADDED live@61');
    assertOnceInOrder(got);
    assert.deepEqual(terminated, []);
  });

  it('lines already handed to the stream are not replayed; queued ones are', () => {
    const { cache } = seeded({ watcherBufferEvents: 5 });
    const w = cache.watch({ ...ALL, resourceVersion: 10n }) as Watcher;
    // The client reads two lines, then stops: the stream buffers up to 16 lines, then 5 queue.
    cache.add(pod('c', 'a', 11));
    cache.add(pod('c', 'b', 12));
    const first = [String(w.stream.read()), String(w.stream.read())];
    for (let i = 0; i < 40; i++) cache.add(pod('c', `q${i}`, 13 + i));
    assert.equal(w.parked, true);
    // 16 lines were handed to the stream (RV 13..28): its position is the last of them.
    assert.equal(w.position, 28n);
    const rest = drain(w);
    const all = [...first, ...rest];
    assert.equal(all.length, 42);
    assertOnceInOrder(all);
    assert.equal(summary(all).at(-1), 'ADDED q39@52');
  });

  it('writes, updates and deletes while parked reach a selective watcher as a reading one gets them', () => {
    const { cache } = seeded({ watcherBufferEvents: 2 });
    const sel = { ...ALL, namespace: 'a', labelSelector: parseLabelSelector('app=web') };
    const stalled = cache.watch({ ...sel, resourceVersion: 10n }) as Watcher;
    const reader = cache.watch({ ...sel, resourceVersion: 10n });
    const seen: string[] = [];
    let rv = 11;
    for (let i = 0; i < 30; i++) {
      cache.add(pod('a', `w${i}`, rv++, { labels: { app: i % 3 === 0 ? 'db' : 'web' } }));
      cache.add(pod('b', `other${i}`, rv++, { labels: { app: 'web' } }));
      if (i % 4 === 0) cache.update(pod('a', `w${i}`, rv++, { labels: { app: 'db' } }));
      if (i % 5 === 0) cache.delete(pod('a', `w${i}`, rv++));
      seen.push(...drain(reader));
    }
    assert.equal(stalled.parked, true);
    const got = drain(stalled);
    assert.deepEqual(summary(got), summary(seen));
    assert.ok(got.length > 10);
    assertOnceInOrder(got);
    // Caught up past the events it does not select: its position is the window's last event.
    assert.equal(stalled.position, BigInt(rv - 1));
  });

  it('a resume interleaved with new writes: partial reads, more writes, a second park; still every event once', () => {
    const { cache } = seeded({ watcherBufferEvents: 4 });
    const w = cache.watch({ ...ALL, resourceVersion: 10n }) as Watcher;
    const reader = cache.watch({ ...ALL, resourceVersion: 10n });
    const got: string[] = [];
    const seen: string[] = [];
    let rv = 11;
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 30; i++) {
        cache.add(pod('c', `r${round}-${i}`, rv++));
        seen.push(...drain(reader));
      }
      // The client reads a few lines only, then stops again.
      for (let k = 0; k < 7; k++) {
        const c = w.stream.read();
        if (c !== null) got.push(String(c));
      }
    }
    got.push(...drain(w));
    assert.equal(got.length, 180);
    assert.deepEqual(summary(got), summary(seen));
    assertOnceInOrder(got);
    assert.equal(w.parked, false);
  });

  it('its position left the window: the backlog, then one ERROR event 410 "too old resource version", reason resource_expired', async () => {
    const terminated: string[] = [];
    const { cache } = seeded({
      watcherBufferEvents: 3,
      historyMinEvents: 5,
      historyMaxEvents: 20,
      onWatcherTerminated: (r) => terminated.push(r),
    });
    const w = cache.watch({ ...ALL, resourceVersion: 10n }) as Watcher;
    cache.add(pod('c', 'first', 11));
    assert.equal(summary(drain(w)).length, 1);
    for (let i = 0; i < 60; i++) cache.add(pod('c', `q${i}`, 12 + i));
    // Ended as soon as the window passed its position (RV 27: 16 lines in the stream after 11).
    assert.equal(w.closed, true);
    assert.equal(w.closeReason, 'fell-behind');
    assert.equal(w.terminationReason, 'resource_expired');
    assert.deepEqual(terminated, ['resource_expired']);
    assert.equal(cache.stats().parkedWatchers, 0);
    assert.equal(cache.stats().watchers, 0);
    const lines = drain(w);
    assert.equal(lines.length, 17);
    assert.deepEqual(summary(lines.slice(0, 16)).at(-1), 'ADDED q15@27');
    // The window's start when it ended: the event after 28 was the oldest one left.
    assert.equal(
      lines[16],
      '{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 27 (28)","reason":"Expired","code":410}}\n',
    );
    await new Promise((r) => setImmediate(r));
    assert.equal(w.stream.readableEnded, true);
  });

  it('a watcher that left the window before its initial events were all sent: reason resource_expired_initial', () => {
    const terminated: string[] = [];
    const { cache } = seeded({
      watcherBufferEvents: 3,
      historyMinEvents: 5,
      historyMaxEvents: 20,
      onWatcherTerminated: (r) => terminated.push(r),
    });
    const w = cache.watch({ ...ALL }) as Watcher; // RV "": the 3 objects as ADDED, then live
    for (let i = 0; i < 60; i++) cache.add(pod('c', `q${i}`, 11 + i));
    assert.equal(w.closed, true);
    assert.deepEqual(terminated, ['resource_expired_initial']);
    const lines = events(drain(w));
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.type, 'ERROR');
    assert.equal(lines[0]?.object.code, 410);
  });

  it('an initial snapshot still being read when it parks is kept: snapshot, then every live event once', () => {
    const { cache } = seeded({ watcherBufferEvents: 3 });
    const w = cache.watch({ ...ALL }) as Watcher;
    for (let i = 0; i < 30; i++) cache.add(pod('c', `q${i}`, 11 + i));
    assert.equal(w.parked, true);
    const got = summary(drain(w));
    assert.deepEqual(got.slice(0, 3), ['ADDED p1@5', 'ADDED p2@7', 'ADDED p3@8']);
    assert.equal(got.length, 33);
    assert.equal(got.at(-1), 'ADDED q29@40');
  });

  it('no bookmark while parked; after the resume, bookmarks again at the current RV', async () => {
    const { cache, clock } = seeded({ watcherBufferEvents: 3, bookmarkIntervalMs: 1000 });
    const w = cache.watch({ ...ALL, resourceVersion: 10n, allowWatchBookmarks: true }) as Watcher;
    for (let i = 0; i < 30; i++) cache.add(pod('c', `q${i}`, 11 + i));
    assert.equal(w.parked, true);
    await clock.step(1000);
    await clock.step(1000);
    const got = events(drain(w));
    assert.equal(got.length, 30);
    assert.equal(
      got.every((e) => e.type === 'ADDED'),
      true,
    );
    await clock.step(1000);
    const after = events(drain(w));
    assert.deepEqual(
      after.map((e) => `${e.type}@${e.object.metadata.resourceVersion}`),
      ['BOOKMARK@40'],
    );
  });

  it('the bound: past --max-parked-watchers the watcher parked the longest is closed (stalled_client), over all caches', () => {
    const parked = new ParkedWatchers(2);
    const terminated: string[] = [];
    const one = seeded({
      watcherBufferEvents: 2,
      parkedWatchers: parked,
      onWatcherTerminated: (r) => terminated.push(r),
    });
    const two = seeded({
      watcherBufferEvents: 2,
      parkedWatchers: parked,
      onWatcherTerminated: (r) => terminated.push(r),
    });
    const a = one.cache.watch({ ...ALL, resourceVersion: 10n }) as Watcher;
    for (let i = 0; i < 20; i++) one.cache.add(pod('c', `a${i}`, 11 + i));
    const b = two.cache.watch({ ...ALL, resourceVersion: 10n }) as Watcher;
    for (let i = 0; i < 20; i++) two.cache.add(pod('c', `b${i}`, 11 + i));
    assert.equal(a.parked && b.parked, true);
    assert.equal(parked.size, 2);
    const c = one.cache.watch({ ...ALL, resourceVersion: 30n }) as Watcher;
    for (let i = 0; i < 20; i++) one.cache.add(pod('c', `c${i}`, 31 + i));
    assert.equal(c.parked, true);
    assert.equal(a.closed, true);
    assert.equal(a.closeReason, 'parked-bound');
    assert.deepEqual(terminated, ['stalled_client']);
    assert.equal(b.closed, false);
    assert.equal(parked.size, 2);
    assert.equal(one.cache.stats().parkedWatchers, 1);
    // A resumed watcher leaves the bound; closing one frees its place too.
    assert.equal(drain(b).length, 20);
    assert.equal(parked.size, 1);
    c.close();
    assert.equal(parked.size, 0);
  });
});
