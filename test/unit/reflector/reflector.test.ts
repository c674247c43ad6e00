import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Reflector, type ReflectorOptions } from '../../../src/reflector/reflector.ts';
import { UpstreamError } from '../../../src/upstream/errors.ts';
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
} from './fakes.ts';

function setup(opts: Partial<ReflectorOptions> = {}) {
  const clock = new FakeClock();
  const lw = new FakeListerWatcher();
  const sink = new RecordingSink();
  const r = new Reflector({ info: configMapInfo, lw, sink, clock, random: () => 0.5, ...opts });
  const done = r.run();
  return {
    clock,
    lw,
    sink,
    r,
    flush: () => flushMicrotasks(50),
    async finish() {
      r.stop();
      await done;
      assert.equal(clock.pending(), 0, 'no timer left behind');
    },
  };
}

const watchList = (rv: string) => ({
  resourceVersion: rv,
  allowWatchBookmarks: true,
  sendInitialEvents: true,
  resourceVersionMatch: 'NotOlderThan',
  timeoutSeconds: 450,
});
const plainWatch = (rv: string) => ({ resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 450 });

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

describe('Reflector: LIST + WATCH pagination (client-go pager rules)', () => {
  it('first list at RV="0" with page size 500; a paginated answer keeps later relists paginated', async () => {
    const t = setup({ useWatchList: false });
    t.lw.listReturns(
      page('100', [cm('a', 90)], 'tok1'),
      page('100', [cm('b', 95)], 'tok2'),
      page('100', [cm('c', 99)]),
    );
    const s = new FakeStream();
    t.lw.watchReturns(s);
    await t.flush();
    assert.deepEqual(t.lw.lists, [
      { resourceVersion: '0', limit: 500, continue: '' },
      { resourceVersion: '', limit: 500, continue: 'tok1' },
      { resourceVersion: '', limit: 500, continue: 'tok2' },
    ]);
    assert.deepEqual(t.sink.calls, ['replace[a@90,b@95,c@99]@100', 'live true']);
    s.push(errorEvent(410, 'Expired'));
    t.lw.listReturns(page('120', [cm('a', 110)]));
    t.lw.watchReturns(new FakeStream());
    await t.flush();
    await t.clock.step(1200);
    await t.flush();
    assert.deepEqual(t.lw.lists[3], { resourceVersion: '100', limit: 500, continue: '' });
    await t.finish();
  });

  it('an unpaginated answer at RV="0" → later relists at RV≠""/"0" are unpaginated', async () => {
    const t = setup({ useWatchList: false });
    t.lw.listReturns(page('100', [cm('a', 90)]));
    const s = new FakeStream();
    t.lw.watchReturns(s);
    await t.flush();
    s.push(errorEvent(410, 'Expired'));
    t.lw.listReturns(page('120', [cm('a', 110)]));
    t.lw.watchReturns(new FakeStream());
    await t.flush();
    await t.clock.step(1200);
    await t.flush();
    assert.deepEqual(t.lw.lists, [
      { resourceVersion: '0', limit: 500, continue: '' },
      { resourceVersion: '100', limit: 0, continue: '' },
    ]);
    assert.deepEqual(
      t.lw.watches.map((w) => w.resourceVersion),
      ['100', '120'],
    );
    await t.finish();
  });

  for (const [label, err] of [
    ['410 Expired', new UpstreamError(410, 'Expired', { reason: 'Expired', code: 410 })],
    [
      'too large resource version',
      new UpstreamError(504, 'Too large resource version', {
        reason: 'Timeout',
        code: 504,
        details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] },
      }),
    ],
  ] as const) {
    it(`${label} on LIST → immediate retry at RV="" (no backoff)`, async () => {
      const t = setup({ useWatchList: false });
      t.lw.listReturns(err, page('200', [cm('a', 150)]));
      t.lw.watchReturns(new FakeStream());
      await t.flush();
      assert.deepEqual(t.lw.lists, [
        { resourceVersion: '0', limit: 500, continue: '' },
        { resourceVersion: '', limit: 500, continue: '' },
      ]);
      assert.deepEqual(t.sink.calls, ['replace[a@150]@200', 'live true']);
      assert.equal(t.r.lastSyncResourceVersion(), '200');
      await t.finish();
    });
  }

  it('a continue token that expired mid-pagination → one full list at the original RV', async () => {
    const t = setup({ useWatchList: false });
    t.lw.listReturns(
      page('100', [cm('a', 90)], 'tok1'),
      new UpstreamError(410, 'Expired'),
      page('130', [cm('a', 90), cm('b', 125)]),
    );
    t.lw.watchReturns(new FakeStream());
    await t.flush();
    assert.deepEqual(t.lw.lists, [
      { resourceVersion: '0', limit: 500, continue: '' },
      { resourceVersion: '', limit: 500, continue: 'tok1' },
      { resourceVersion: '0' },
    ]);
    assert.deepEqual(t.sink.calls, ['replace[a@90,b@125]@130', 'live true']);
    await t.finish();
  });
});

describe('Reflector: watch errors', () => {
  async function synced(opts: Partial<ReflectorOptions> = {}) {
    const t = setup({ useWatchList: false, ...opts });
    t.lw.listReturns(page('100', [cm('a', 90)]));
    const s = new FakeStream();
    t.lw.watchReturns(s);
    await t.flush();
    return { ...t, s };
  }

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

  it('5xx on the watch request is retried without relisting within 30 s, then relists', async () => {
    const t = await synced({ backoff: undefined });
    t.s.push(ev('MODIFIED', cm('a', 101))).end();
    const e500 = () => new UpstreamError(500, 'internal error', { reason: 'InternalError', code: 500 });
    for (let i = 0; i < 10; i++) t.lw.watchReturns(e500());
    await t.flush();
    // backoff sleeps: 1.2, 2.4, 4.8, 9.6, 19.2 s → the 6th failure is at 37.2 s > 30 s deadline.
    for (const d of [1200, 2400, 4800, 9600, 19200]) {
      assert.deepEqual(t.clock.pendingDelays(), [d]);
      await t.clock.step(d);
    }
    await t.flush();
    assert.equal(t.lw.watches.length, 7);
    assert.equal(t.lw.lists.length, 1, 'not yet relisted');
    // The 6th failure exceeded the deadline: ListAndWatch returned; relist after the next backoff.
    assert.deepEqual(t.clock.pendingDelays(), [38400]);
    t.lw.listReturns(page('300', []));
    await t.clock.step(38400);
    assert.equal(t.lw.lists.length, 2);
    await t.finish();
  });

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
    assert.deepEqual(t.r.status().relists, { 'very-short-watch': 1 });
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

  it('a silent stream is presumed half-open after the liveness window and restarted from the last RV', async () => {
    const t = await synced({ livenessWindowMs: 180_000 });
    await t.clock.step(60_000);
    t.s.push(bookmark(110));
    await t.flush();
    await t.clock.step(179_999);
    assert.equal(t.s.closed, false);
    await t.clock.step(1);
    await t.flush();
    assert.equal(t.s.closed, true);
    // The re-watch hangs (upstream frozen): not live meanwhile.
    assert.deepEqual(t.sink.calls, ['replace[a@90]@100', 'live true', 'bookmark 110', 'live false']);
    assert.deepEqual(
      t.lw.watches.map((w) => w.resourceVersion),
      ['100', '110'],
    );
    const s2 = new FakeStream();
    t.lw.watchReturns(s2);
    await t.flush();
    assert.equal(t.lw.lists.length, 1);
    s2.push(ev('MODIFIED', cm('a', 120)));
    await t.flush();
    assert.deepEqual(t.sink.calls.slice(4), ['live true', 'update a@120']);
    assert.equal(t.r.status().watchRestarts, 1);
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
