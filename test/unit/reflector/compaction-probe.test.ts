import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exactReadAt } from '../../../src/reflector/compaction-probe.ts';
import { UpstreamError } from '../../../src/util/errors.ts';
import { cm, FakeListerWatcher, page } from '../../support/fake-lister-watcher.ts';

const expired = () =>
  new UpstreamError(410, 'LIST configmaps: 410 The resourceVersion for the provided list is too old.', {
    kind: 'Status',
    code: 410,
    reason: 'Expired',
    message: 'The resourceVersion for the provided list is too old.',
  });

describe('exactReadAt (reflector/compaction-probe.ts)', () => {
  it('sends one Exact LIST of one item at the RV; 200 is available', async () => {
    const lw = new FakeListerWatcher().listReturns(page('120', [cm('a', 90)], 'token'));
    assert.equal(await exactReadAt(lw, 120n), 'available');
    assert.deepEqual(lw.lists, [{ resourceVersion: '120', resourceVersionMatch: 'Exact', limit: 1 }]);
  });

  it('410 is compacted; any other error, or the deadline, is unknown (never throws)', async () => {
    assert.equal(await exactReadAt(new FakeListerWatcher().listReturns(expired()), 120n), 'compacted');
    const refused = new FakeListerWatcher().listReturns(new Error('connect ECONNREFUSED'));
    assert.equal(await exactReadAt(refused, 120n), 'unknown');
    const forbidden = new FakeListerWatcher().listReturns(new UpstreamError(403, 'LIST configmaps: 403'));
    assert.equal(await exactReadAt(forbidden, 120n), 'unknown');
    // Nothing queued: the fake waits until the deadline aborts the request.
    assert.equal(await exactReadAt(new FakeListerWatcher(), 120n, undefined, 20), 'unknown');
    const ac = new AbortController();
    const pending = exactReadAt(new FakeListerWatcher(), 120n, ac.signal);
    ac.abort();
    assert.equal(await pending, 'unknown');
  });
});
