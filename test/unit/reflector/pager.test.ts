import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UpstreamError } from '../../../src/util/errors.ts';
import { cm, errorEvent, FakeStream, page, setup } from '../../support/fake-lister-watcher.ts';

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
