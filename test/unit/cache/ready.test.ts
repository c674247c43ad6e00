import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StatusError } from '../../../src/apimachinery/status.ts';
import { Ready } from '../../../src/cache/ready.ts';
import { ALL, newCache, seeded, statusCode } from '../../support/watch-cache-fixtures.ts';

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

  it('close() ends all watchers and their bookmark timers', () => {
    const { cache, clock } = seeded();
    const w = cache.watch({ ...ALL, allowWatchBookmarks: true });
    assert.equal(clock.pending(), 1);
    cache.close();
    assert.equal(w.closeReason, 'shutdown');
    assert.equal(clock.pending(), 0);
  });
});

describe('Ready', () => {
  it('moves pending → ready → stopped as drawn, refusing reads only while pending', () => {
    const r = new Ready();
    assert.equal(r.state, 'pending');
    assert.equal(r.synced, false);
    assert.throws(
      () => r.check(),
      (e: unknown) =>
        e instanceof StatusError && e.code === 429 && e.message === 'storage is (re)initializing',
    );
    r.stop();
    assert.equal(r.state, 'pending');
    r.set();
    assert.equal(r.state, 'ready');
    assert.equal(r.synced, true);
    r.check();
    r.set();
    assert.equal(r.state, 'ready');
    r.stop();
    assert.equal(r.state, 'stopped');
    r.set();
    assert.equal(r.state, 'stopped');
    assert.equal(r.synced, true);
    r.check();
  });
});
