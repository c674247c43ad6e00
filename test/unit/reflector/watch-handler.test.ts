import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cm, ev, FakeStream, page, setup, synced } from '../../support/fake-lister-watcher.ts';

describe('Reflector: handleAnyWatch', () => {
  it('a watch closed in <1 s with 0 events is a very-short-watch error: backoff, then relist', async () => {
    const t = await synced();
    t.s.end();
    await t.flush();
    assert.equal(t.r.status().lastError?.startsWith('VeryShortWatchError: very short watch'), true);
    assert.deepEqual(t.clock.pendingDelays(), [1200]);
    t.lw.listReturns(page('110', [cm('a', 90)]));
    t.lw.watchReturns(new FakeStream());
    await t.clock.step(1200);
    assert.deepEqual(
      t.lw.lists.map((l) => l.resourceVersion),
      ['0', '100'],
    );
    assert.deepEqual(t.r.status().relists, { very_short_watch: 1 });
    await t.finish();
  });

  it('events of the wrong kind or apiVersion are dropped', async () => {
    const t = await synced();
    const secret = cm('s', 101, { kind: 'Secret' });
    const v2 = cm('x', 102, { apiVersion: 'v2' });
    t.s.push(ev('ADDED', secret), ev('ADDED', v2), ev('ADDED', cm('b', 103)));
    await t.flush();
    assert.deepEqual(t.sink.calls.slice(2), ['add b@103']);
    assert.equal(t.r.lastSyncResourceVersion(), '103');
    await t.finish();
  });
});

describe('Reflector: broken streams (client-go StreamWatcher semantics)', () => {
  it('a connection broken mid-watch re-watches from the last RV without relisting', async () => {
    const t = setup({ useWatchList: false });
    t.lw.listReturns(page('100', [cm('a', 90)]));
    const s = new FakeStream();
    t.lw.watchReturns(s);
    await t.flush();
    s.push(ev('MODIFIED', cm('a', 101))).fail(
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
    );
    t.lw.watchReturns(new FakeStream());
    await t.flush();
    assert.deepEqual(
      t.lw.watches.map((w) => w.resourceVersion),
      ['100', '101'],
    );
    assert.equal(t.lw.lists.length, 1);
    assert.deepEqual(t.clock.pendingDelays(), [180_000], 'only the liveness timer: no backoff');
    await t.finish();
  });

  it('an undecodable line is an internal error: re-watch after backoff without relisting', async () => {
    const t = setup({ useWatchList: false });
    t.lw.listReturns(page('100', [cm('a', 90)]));
    const s = new FakeStream();
    t.lw.watchReturns(s);
    await t.flush();
    s.push(ev('MODIFIED', cm('a', 101))).fail(new SyntaxError('Unexpected token'));
    t.lw.watchReturns(new FakeStream());
    await t.flush();
    assert.deepEqual(t.clock.pendingDelays(), [1200]);
    await t.clock.step(1200);
    assert.deepEqual(
      t.lw.watches.map((w) => w.resourceVersion),
      ['100', '101'],
    );
    assert.equal(t.lw.lists.length, 1);
    assert.match(t.r.status().lastError ?? '', /unable to decode an event from the watch stream/);
    await t.finish();
  });
});
