import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GAP_PROOF_TIMEOUT_SECONDS, proveNoEventsBetween } from '../../../src/reflector/gap-proof.ts';
import {
  bookmark,
  cm,
  errorEvent,
  ev,
  FakeListerWatcher,
  FakeStream,
} from '../../support/fake-lister-watcher.ts';

describe('proveNoEventsBetween (reflector/gap-proof.ts)', () => {
  it('asks for a short bookmarked watch from `from`; a bookmark at or past `to` proves the gap empty', async () => {
    const lw = new FakeListerWatcher();
    const s = new FakeStream().push(bookmark(150));
    lw.watchReturns(s);
    assert.equal(await proveNoEventsBetween(lw, 100n, 150n), true);
    assert.deepEqual(lw.watches, [
      { resourceVersion: '100', allowWatchBookmarks: true, timeoutSeconds: GAP_PROOF_TIMEOUT_SECONDS },
    ]);
    assert.equal(s.closed, true, 'the proof closes its watch');
  });

  it('an event after the gap proves it; an event inside it disproves it', async () => {
    const after = new FakeListerWatcher().watchReturns(new FakeStream().push(ev('MODIFIED', cm('a', 151))));
    assert.equal(await proveNoEventsBetween(after, 100n, 150n), true);
    const inside = new FakeListerWatcher().watchReturns(new FakeStream().push(ev('DELETED', cm('a', 150))));
    assert.equal(await proveNoEventsBetween(inside, 100n, 150n), false);
    // A bookmark below `to` proves nothing yet: the next line decides.
    const stepwise = new FakeListerWatcher().watchReturns(
      new FakeStream().push(bookmark(120), ev('ADDED', cm('b', 130))),
    );
    assert.equal(await proveNoEventsBetween(stepwise, 100n, 150n), false);
  });

  it('410, a refused watch, an early end or the deadline: false (never throws)', async () => {
    const expired = new FakeListerWatcher().watchReturns(new FakeStream().push(errorEvent(410, 'Expired')));
    assert.equal(await proveNoEventsBetween(expired, 100n, 150n), false);
    const refused = new FakeListerWatcher().watchReturns(new Error('connect ECONNREFUSED'));
    assert.equal(await proveNoEventsBetween(refused, 100n, 150n), false);
    const ended = new FakeListerWatcher().watchReturns(new FakeStream().end());
    assert.equal(await proveNoEventsBetween(ended, 100n, 150n), false);
    const silent = new FakeStream();
    const slow = new FakeListerWatcher().watchReturns(silent);
    assert.equal(await proveNoEventsBetween(slow, 100n, 150n, undefined, 30), false);
    assert.equal(silent.closed, true);
    // Nothing to prove: no request at all.
    const none = new FakeListerWatcher();
    assert.equal(await proveNoEventsBetween(none, 150n, 150n), true);
    assert.equal(none.watches.length, 0);
  });
});
