import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
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
