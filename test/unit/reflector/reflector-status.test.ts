import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StatusRecorder } from '../../../src/reflector/reflector-status.ts';
import { VeryShortWatchError } from '../../../src/util/errors.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { RecordingSink } from '../../support/fake-lister-watcher.ts';

describe('StatusRecorder', () => {
  it('tells the sink only about liveness changes; a sync makes the stream live', async () => {
    const clock = new FakeClock();
    const sink = new RecordingSink();
    const s = new StatusRecorder('configmaps', sink, clock, silentLogger);
    s.setLive(false);
    s.setResourceVersion('40');
    await clock.step(2_000);
    s.recordSync('watch-list', 3, clock.now() - 1_500);
    s.setLive(true);
    s.setLive(false);
    assert.deepEqual(sink.calls, ['live true', 'live false']);
    assert.deepEqual(s.snapshot(), {
      resource: 'configmaps',
      synced: true,
      lastSyncTimeMs: clock.now(),
      lastSyncMode: 'watch-list',
      lastSyncObjects: 3,
      relists: {},
      warmStart: false,
      watchRestarts: 0,
      watchListFallbacks: 0,
      lastResourceVersion: '40',
      live: false,
      periodicBookmarks: false,
      lastError: null,
      passThrough: null,
    });
  });

  it('counts relists after the first sync by the reason set since the previous one, "error" by default', () => {
    const s = new StatusRecorder('configmaps', new RecordingSink(), new FakeClock(), silentLogger);
    s.relistReason('expired');
    s.listAndWatchStarted();
    s.recordSync('list', 0, 0);
    s.relistReason('expired');
    s.listAndWatchStarted();
    s.listAndWatchStarted();
    s.relistReason('very_short_watch');
    s.listAndWatchStarted();
    s.noteError(new VeryShortWatchError('very short watch'), 'relisting');
    s.watchRestarted();
    s.watchListFellBack();
    const st = s.snapshot();
    assert.deepEqual(st.relists, { expired: 1, error: 1, very_short_watch: 1 });
    assert.deepEqual(
      [st.lastError, st.watchRestarts, st.watchListFallbacks],
      ['VeryShortWatchError: very short watch', 1, 1],
    );
    st.relists.expired = 99;
    assert.equal(s.snapshot().relists.expired, 1, 'snapshot is a copy');
  });
});
