import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SyncProgress } from '../../../src/reflector/sync-progress.ts';
import { collectInitialEvents } from '../../../src/reflector/watch-list.ts';
import { UpstreamError } from '../../../src/util/errors.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import {
  bookmark,
  cm,
  errorEvent,
  ev,
  FakeStream,
  page,
  plainWatch,
  setup,
  watchList,
} from '../../support/fake-lister-watcher.ts';

describe('Reflector: watch-list', () => {
  it('withholds the RV of the synthetic burst c@30,a@10,b@20 until the bookmark, then replaces once and keeps the stream', async () => {
    const t = setup();
    const s = new FakeStream();
    t.lw.watchReturns(s);
    await t.flush();
    assert.deepEqual(t.lw.watches, [watchList('')]);

    s.push(ev('ADDED', cm('c', 30)), ev('ADDED', cm('a', 10)), ev('ADDED', cm('b', 20)));
    await t.flush();
    assert.equal(t.r.lastSyncResourceVersion(), '');
    assert.deepEqual(t.sink.calls, []);

    s.push(bookmark(40, true));
    await t.flush();
    assert.deepEqual(t.sink.calls, ['replace[c@30,a@10,b@20]@40', 'live true']);
    assert.equal(t.r.lastSyncResourceVersion(), '40');

    // The same stream carries the live events: no new request.
    s.push(ev('MODIFIED', cm('a', 41)), bookmark(45), ev('DELETED', cm('b', 46)), ev('ADDED', cm('d', 47)));
    await t.flush();
    assert.deepEqual(t.sink.calls.slice(2), ['update a@41', 'bookmark 45', 'delete b@46', 'add d@47']);
    assert.equal(t.r.lastSyncResourceVersion(), '47');
    assert.equal(t.lw.watches.length, 1);
    assert.equal(t.lw.lists.length, 0);
    assert.equal(s.closed, false);
    const st = t.r.status();
    assert.equal(st.synced, true);
    assert.equal(st.lastSyncMode, 'watch-list');
    assert.equal(st.lastSyncObjects, 3);
    assert.equal(st.lastResourceVersion, '47');
    assert.equal(st.live, true);
    await t.finish();
    assert.equal(s.closed, true);
  });

  it('a MODIFIED inside the burst is not published either, and a stream broken mid-burst is discarded for LIST+WATCH from scratch', async () => {
    const t = setup();
    const s = new FakeStream();
    t.lw.watchReturns(s);
    s.push(ev('ADDED', cm('c', 30)), ev('ADDED', cm('a', 10)), ev('MODIFIED', cm('a', 35)));
    await t.flush();
    assert.equal(t.r.lastSyncResourceVersion(), '');
    s.fail(new Error('connection reset'));
    await t.flush();
    assert.equal(s.closed, true);
    assert.deepEqual(t.sink.calls, []);
    assert.deepEqual(t.lw.lists, [{ resourceVersion: '0', limit: 500, continue: '' }]);
    t.lw.listReturns(page('50', [cm('a', 35), cm('c', 30)]));
    const live = new FakeStream();
    t.lw.watchReturns(live);
    await t.flush();
    assert.deepEqual(t.sink.calls, ['replace[a@35,c@30]@50', 'live true']);
    assert.deepEqual(t.lw.watches[1], plainWatch('50'));
    assert.equal(t.r.status().watchListFallbacks, 1);
    assert.equal(t.r.status().lastSyncMode, 'list');
    await t.finish();
  });

  it('a stream that ends before the initial-events-end bookmark is discarded', async () => {
    const t = setup();
    const s = new FakeStream();
    t.lw.watchReturns(s);
    s.push(ev('ADDED', cm('a', 10)), bookmark(15)).end();
    await t.flush();
    assert.deepEqual(t.sink.calls, []);
    assert.equal(t.lw.lists.length, 1);
    await t.finish();
  });

  for (const code of [400, 422]) {
    it(`falls back to LIST when the watch-list request is rejected with ${code}`, async () => {
      const t = setup();
      t.lw.watchReturns(new UpstreamError(code, 'sendInitialEvents is forbidden'));
      t.lw.listReturns(page('7', [cm('a', 5)]));
      t.lw.watchReturns(new FakeStream());
      await t.flush();
      assert.deepEqual(t.lw.lists, [{ resourceVersion: '0', limit: 500, continue: '' }]);
      assert.deepEqual(t.lw.watches, [watchList(''), plainWatch('7')]);
      assert.deepEqual(t.sink.calls, ['replace[a@5]@7', 'live true']);
      await t.finish();
    });
  }

  it('410 on the live watch relists via watch-list from the last RV; 410 again retries at RV=""', async () => {
    const t = setup();
    const s = new FakeStream();
    t.lw.watchReturns(s);
    s.push(ev('ADDED', cm('a', 10)), bookmark(40, true), ev('MODIFIED', cm('a', 41)));
    await t.flush();
    s.push(errorEvent(410, 'Expired', 'too old resource version: 41 (60)'));
    await t.flush();
    assert.equal(s.closed, true);
    assert.deepEqual(t.sink.calls.slice(-1), ['live false']);
    // Relist after the reflector backoff: 0.8 s × (1 + 0.5).
    assert.deepEqual(t.clock.pendingDelays(), [1200]);
    t.lw.watchReturns(new UpstreamError(410, 'Expired', { reason: 'Expired', code: 410 }));
    const s2 = new FakeStream();
    t.lw.watchReturns(s2);
    await t.clock.step(1200);
    await t.flush();
    assert.deepEqual(t.lw.watches.slice(1), [watchList('41'), watchList('')]);
    s2.push(ev('ADDED', cm('b', 50)), bookmark(60, true));
    await t.flush();
    assert.deepEqual(t.sink.calls.slice(-2), ['replace[b@50]@60', 'live true']);
    assert.deepEqual(t.r.status().relists, { expired: 1 });
    assert.equal(t.lw.lists.length, 0);
    await t.finish();
  });
});

describe('collectInitialEvents', () => {
  it('a stream that ended before the bookmark is a WatchListIncompleteError', async () => {
    const progress = new SyncProgress({
      log: silentLogger,
      clock: new FakeClock(),
      intervalMs: 5_000,
      mode: 'watch-list',
      start: 0,
    });
    await assert.rejects(
      collectInitialEvents(async (h) => {
        h.store('add', cm('a', 10));
        h.onRV('10', false);
        return false;
      }, progress),
      {
        name: 'WatchListIncompleteError',
        code: 'KCP_ERR_WATCH_LIST_INCOMPLETE',
        message: 'watch-list stream ended before the initial-events-end bookmark',
      },
    );
  });

  it('the snapshot is the temporary store at the bookmark RV, with the bookmark bytes', async () => {
    const progress = new SyncProgress({
      log: silentLogger,
      clock: new FakeClock(),
      intervalMs: 5_000,
      mode: 'watch-list',
      start: 0,
    });
    const end = Buffer.from('{"kind":"ConfigMap"}');
    const s = await collectInitialEvents(async (h) => {
      h.store('add', cm('a', 10));
      h.onRV('10', false);
      h.store('add', cm('b', 20));
      h.onRV('20', false);
      h.store('delete', cm('a', 25));
      h.onRV('25', true);
      h.bookmark('30', end);
      h.onRV('30', true);
      return true;
    }, progress);
    assert.deepEqual(
      [s.objects.map((o) => o.object.metadata.name), s.resourceVersion, s.endBookmark],
      [['b'], '30', end],
    );
  });

  it('issue 12: a burst of ADDED only is passed in arrival order, a repeated key included (the sink keeps the later)', async () => {
    const progress = new SyncProgress({
      log: silentLogger,
      clock: new FakeClock(),
      intervalMs: 5_000,
      mode: 'watch-list',
      start: 0,
    });
    const s = await collectInitialEvents(async (h) => {
      h.store('add', cm('b', 10));
      h.store('add', cm('a', 20));
      h.store('add', cm('b', 30));
      h.onRV('30', true);
      h.bookmark('30', Buffer.from('{}'));
      return true;
    }, progress);
    assert.deepEqual(
      s.objects.map((o) => `${o.object.metadata.name}@${o.object.metadata.resourceVersion}`),
      ['b@10', 'a@20', 'b@30'],
    );
  });

  it("holds each object in the sink's compact form as it arrives (not at the end)", async () => {
    const progress = new SyncProgress({
      log: silentLogger,
      clock: new FakeClock(),
      intervalMs: 5_000,
      mode: 'watch-list',
      start: 0,
    });
    const compacted: string[] = [];
    const small = (o: ReturnType<typeof cm>) => {
      compacted.push(o.object.metadata.name);
      return { raw: o.raw, object: { metadata: o.object.metadata } };
    };
    const s = await collectInitialEvents(
      async (h) => {
        h.store('add', cm('a', 10));
        assert.deepEqual(compacted, ['a']);
        h.store('add', cm('b', 20));
        h.store('delete', cm('a', 25));
        h.onRV('25', true);
        h.bookmark('30', Buffer.from('{}'));
        return true;
      },
      progress,
      small,
    );
    assert.deepEqual(compacted, ['a', 'b']);
    assert.deepEqual(
      s.objects.map((o) => Object.keys(o.object)),
      [['metadata']],
    );
  });
});
