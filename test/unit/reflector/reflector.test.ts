import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Reflector } from '../../../src/reflector/reflector.ts';
import { UpstreamError } from '../../../src/util/errors.ts';
import { FakeClock, flushMicrotasks } from '../../support/fake-clock.ts';
import {
  bookmark,
  cm,
  configMapInfo,
  errorEvent,
  ev,
  FakeListerWatcher,
  FakeStream,
  page,
  RecordingSink,
  setup,
  synced,
} from '../../support/fake-lister-watcher.ts';

describe('Reflector: watch errors', () => {
  it('429 on the watch request → re-watch after backoff without relisting', async () => {
    const t = await synced();
    await t.clock.step(5_000);
    t.s.push(ev('MODIFIED', cm('a', 101))).end();
    t.lw.watchReturns(new UpstreamError(429, 'Too many requests', { reason: 'TooManyRequests', code: 429 }));
    await t.flush();
    assert.deepEqual(t.clock.pendingDelays(), [1200]);
    const s2 = new FakeStream();
    t.lw.watchReturns(s2);
    await t.clock.step(1200);
    assert.deepEqual(
      t.lw.watches.map((w) => w.resourceVersion),
      ['100', '101', '101'],
    );
    assert.equal(t.lw.lists.length, 1);
    // Not live while backing off; live again once the upstream accepted the new stream.
    assert.deepEqual(t.sink.calls, [
      'replace[a@90]@100',
      'live true',
      'update a@101',
      'live false',
      'live true',
    ]);
    s2.push(bookmark(105));
    await t.flush();
    assert.deepEqual(t.sink.calls.slice(5), ['bookmark 105']);
    assert.equal(t.r.status().watchRestarts, 2);
    await t.finish();
  });

  it('429 as an ERROR event on the stream → re-watch after backoff without relisting', async () => {
    const t = await synced();
    t.s.push(ev('MODIFIED', cm('a', 101)), errorEvent(429, 'TooManyRequests'));
    t.lw.watchReturns(new FakeStream());
    await t.flush();
    await t.clock.step(1200);
    assert.deepEqual(
      t.lw.watches.map((w) => w.resourceVersion),
      ['100', '101'],
    );
    assert.equal(t.lw.lists.length, 1);
    await t.finish();
  });

  it('connection refused → re-watch after backoff without relisting', async () => {
    const t = await synced();
    t.s.push(ev('MODIFIED', cm('a', 101))).end();
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    t.lw.watchReturns(new TypeError('fetch failed', { cause: refused }), new FakeStream());
    await t.flush();
    await t.clock.step(1200);
    assert.deepEqual(
      t.lw.watches.map((w) => w.resourceVersion),
      ['100', '101', '101'],
    );
    assert.equal(t.lw.lists.length, 1);
    await t.finish();
  });

  it('a watch that ends cleanly after ≥1 s re-watches at once from the last RV', async () => {
    const t = await synced();
    await t.clock.step(1000);
    t.s.end();
    t.lw.watchReturns(new FakeStream());
    await t.flush();
    assert.deepEqual(
      t.lw.watches.map((w) => w.resourceVersion),
      ['100', '100'],
    );
    assert.equal(t.lw.lists.length, 1);
    await t.finish();
  });

  it('watch timeoutSeconds is uniform in [300, 600)', async () => {
    for (const [rnd, want] of [
      [0, 300],
      [0.5, 450],
      [0.9999, 599],
    ] as const) {
      const t = setup({ random: () => rnd });
      await t.flush();
      assert.equal(t.lw.watches[0]?.timeoutSeconds, want);
      await t.finish();
    }
  });
});

describe('Reflector: isolation', () => {
  it('one reflector stuck in backoff does not delay another', async () => {
    const clock = new FakeClock();
    const bad = new FakeListerWatcher();
    const good = new FakeListerWatcher();
    const s1 = new RecordingSink();
    const s2 = new RecordingSink();
    const r1 = new Reflector({
      info: configMapInfo,
      lw: bad,
      sink: s1,
      clock,
      random: () => 0.5,
      useWatchList: false,
    });
    const r2 = new Reflector({
      info: configMapInfo,
      lw: good,
      sink: s2,
      clock,
      random: () => 0.5,
      useWatchList: false,
    });
    bad.listReturns(new UpstreamError(500, 'boom'));
    good.listReturns(page('5', [cm('a', 5)]));
    good.watchReturns(new FakeStream());
    const d1 = r1.run();
    const d2 = r2.run();
    await flushMicrotasks(50);
    assert.deepEqual(s2.calls, ['replace[a@5]@5', 'live true']);
    assert.deepEqual(s1.calls, []);
    r1.stop();
    r2.stop();
    await Promise.all([d1, d2]);
  });
});
