import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import { CachedResource, type ResourcePolicy, type Serving } from '../../../src/resources/cached-resource.ts';
import type { LoadedSnapshot, ResourceSnapshot } from '../../../src/snapshot/resource-snapshot.ts';
import type { SnapshotHeader } from '../../../src/snapshot/snapshot-format.ts';
import type { Upstream } from '../../../src/upstream/connection.ts';
import { UpstreamError } from '../../../src/util/errors.ts';
import { cm, configMapInfo, FakeListerWatcher, FakeStream, page } from '../../support/fake-lister-watcher.ts';

/** Waits (polling, up to 30 s) until `cond` holds. */
async function waitFor(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 30 s`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A resource over a scripted lister-watcher, recording what it served and what its policy heard. */
function harness(lw: FakeListerWatcher, over: Partial<ResourcePolicy> = {}) {
  const seen: string[] = [];
  const served: WatchCache[] = [];
  const serving: Serving = {
    serve: (c) => {
      served.push(c);
      seen.push('serve');
    },
    unserve: () => seen.push('unserve'),
  };
  const r = new CachedResource({
    name: 'configmaps',
    origin: 'configured',
    scope: undefined,
    upstream: {} as Upstream,
    discover: async () => ({ ...configMapInfo }),
    listerWatcherFor: () => lw,
    reflector: { useWatchList: false },
    serving,
    policy: () => ({
      onFirstSync: () => seen.push('first-sync'),
      onRelist: () => seen.push('relist'),
      onError: (_r, err) => seen.push(`error ${(err as Error).message}`),
      onStop: () => seen.push('policy-stop'),
      ...over,
    }),
  });
  return { r, seen, served };
}

describe('CachedResource: one owner of a resource (discovery, reflector, watch cache, serving)', () => {
  it('serves its watch cache once discovered, tells the policy of the first sync and a relist, and stops as one', async () => {
    const first = new FakeStream();
    const lw = new FakeListerWatcher()
      .listReturns(page('10', [cm('a', 5)]), page('20', [cm('a', 15)]))
      .watchReturns(first, new FakeStream());
    const h = harness(lw);
    h.r.start();
    await waitFor(() => h.seen.includes('first-sync'), 'first sync');
    assert.deepEqual(h.seen, ['serve', 'first-sync']);
    assert.equal(h.served[0], h.r.cache, 'the watch cache it owns is the one served');
    assert.equal(h.r.state().phase, 'running');
    assert.equal(h.r.state().objects, 1);
    assert.equal(h.r.state().resourceVersion, '10');
    // 410 on the watch: the reflector relists, the policy hears of it.
    first.push({
      type: 'ERROR',
      object: { kind: 'Status', code: 410, reason: 'Expired', message: 'gone' },
    } as never);
    await waitFor(() => h.seen.includes('relist'), 'relist');
    assert.equal(h.r.state().resourceVersion, '20');
    await h.r.stop();
    assert.deepEqual(h.seen.slice(-2), ['policy-stop', 'unserve']);
    assert.equal(h.r.state().phase, 'stopped');
    assert.equal(h.r.cache?.stats().watchers, 0);
  });

  it('stopped while discovering: no reflector, never served, phase stopped', async () => {
    const lw = new FakeListerWatcher();
    let release: () => void = () => {};
    const r = new CachedResource({
      name: 'widgets.example.com',
      origin: 'configured',
      scope: undefined,
      upstream: {} as Upstream,
      discover: (_n, signal) =>
        new Promise((_, reject) => {
          release = () => reject(new Error('not yet'));
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
      listerWatcherFor: () => lw,
      serving: {
        serve: () => assert.fail('served'),
        unserve: () => {},
      },
      policy: () => ({}),
    });
    r.start();
    await r.stop();
    release();
    assert.equal(r.entry().phase, 'stopped');
    assert.equal(r.cache, undefined);
    assert.equal(lw.lists.length, 0);
  });

  it('a list whose resourceVersion does not parse: pass-through, no longer served', async () => {
    const lw = new FakeListerWatcher().listReturns(page('not-a-number', []));
    const h = harness(lw);
    h.r.start();
    await waitFor(() => h.r.entry().phase === 'pass-through', 'pass-through');
    assert.deepEqual(h.seen, ['serve', 'unserve']);
    await h.r.stop();
  });
});

describe('CachedResource: the compaction floor of its watch cache', () => {
  it('probes with an Exact LIST of one item through its lister-watcher; a 410 raises the floor, counted', async () => {
    const lw = new FakeListerWatcher().listReturns(page('10', [cm('a', 5)])).watchReturns(new FakeStream());
    const probes: string[] = [];
    const r = new CachedResource({
      name: 'configmaps',
      origin: 'configured',
      scope: undefined,
      upstream: {} as Upstream,
      discover: async () => ({ ...configMapInfo }),
      listerWatcherFor: () => lw,
      reflector: { useWatchList: false },
      serving: { serve: () => {}, unserve: () => {} },
      policy: () => ({}),
      metrics: {
        eventReceived: () => {},
        eventDispatched: () => {},
        watcherTerminated: () => {},
        watcherParked: () => {},
        watcherResumed: () => {},
        compactionProbe: (gr, answer) => probes.push(`${gr.group}/${gr.resource} ${answer}`),
      },
    });
    r.start();
    try {
      await waitFor(() => r.cache?.isSynced() === true, 'first sync');
      // The window is [10, 10]: one probe at 10, answered 410.
      lw.listReturns(
        new UpstreamError(410, 'LIST configmaps: 410 too old', { code: 410, reason: 'Expired' }),
      );
      assert.equal(await r.cache!.compactedAt(10n), true);
      assert.deepEqual(lw.lists.at(-1), { resourceVersion: '10', resourceVersionMatch: 'Exact', limit: 1 });
      assert.deepEqual(probes, ['/configmaps compacted']);
    } finally {
      await r.stop();
    }
  });
});

describe('CachedResource.restored (what a warm start holds requests for)', () => {
  /** An upstream that never answers (until the resource stops). */
  const never = <T>(signal: AbortSignal): Promise<T> =>
    new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
  /** A snapshot that loads `loaded` and writes nothing. */
  const snapshotOf = (loaded: LoadedSnapshot | undefined) =>
    ({
      load: async () => loaded,
      start: () => {},
      write: async () => {},
      final: async () => {},
      discard: async () => {},
      stop: () => {},
    }) as unknown as ResourceSnapshot;

  it('resolves once the snapshot is restored into the served cache, without waiting for the upstream', async () => {
    const lw = new FakeListerWatcher();
    const served: WatchCache[] = [];
    const r = new CachedResource({
      name: 'configmaps',
      origin: 'configured',
      scope: undefined,
      upstream: {} as Upstream,
      discover: (_n, signal) => never(signal),
      listerWatcherFor: () => lw,
      reflector: { useWatchList: false },
      serving: { serve: (c) => served.push(c), unserve: () => {} },
      policy: () => ({}),
      snapshot: snapshotOf({
        header: { resourceVersion: '10', takenAtMs: Date.now() } as SnapshotHeader,
        info: { ...configMapInfo },
        state: { resourceVersion: 10n, windowStart: 5n, objects: [cm('a', 7)], events: [] },
      }),
      // The upstream never answers the resume check.
      verifySnapshot: (_s, _lw, signal) => never(signal),
    });
    r.start();
    await r.restored();
    assert.equal(served.length, 1, 'served before the upstream answered');
    assert.equal(served[0], r.cache);
    assert.equal(r.cache?.stats().restoredFromMs !== null, true);
    assert.equal(r.state().objects, 1);
    assert.equal(r.state().resourceVersion, '10');
    await r.stop();
  });

  it('resolves at once on a cold start (no snapshot), before discovery and the sync', async () => {
    const r = new CachedResource({
      name: 'configmaps',
      origin: 'configured',
      scope: undefined,
      upstream: {} as Upstream,
      discover: (_n, signal) => never(signal),
      listerWatcherFor: () => new FakeListerWatcher(),
      reflector: { useWatchList: false },
      serving: { serve: () => {}, unserve: () => {} },
      policy: () => ({}),
      snapshot: snapshotOf(undefined),
    });
    r.start();
    await r.restored();
    assert.equal(r.cache, undefined, 'nothing served: discovery has not answered');
    await r.stop();
  });
});
