import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LivenessWatchdog } from '../../../src/reflector/liveness.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { bookmark, cm, ev, FakeStream, synced } from '../../support/fake-lister-watcher.ts';
import { logLines } from '../../support/log-lines.ts';

describe('Reflector: liveness watchdog', () => {
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

  it('issue 11 (pool): a re-watch that is not accepted within the window since the last event is not live', async () => {
    const t = await synced({ livenessWindowMs: 180_000 });
    await t.clock.step(100_000);
    t.s.push(bookmark(110));
    await t.flush();
    await t.clock.step(60_000);
    // The stream ends cleanly (its timeout); the re-watch is queued (e.g. behind slow
    // pass-through requests on a shared pool) and its answer does not come.
    t.s.end();
    await t.flush();
    assert.deepEqual(
      t.lw.watches.map((w) => w.resourceVersion),
      ['100', '110'],
    );
    await t.clock.step(119_999);
    assert.deepEqual(t.sink.calls, ['replace[a@90]@100', 'live true', 'bookmark 110']);
    // 180 s since the last bookmark, and still no stream: not live.
    await t.clock.step(1);
    await t.flush();
    assert.deepEqual(t.sink.calls.slice(3), ['live false']);
    const s2 = new FakeStream();
    t.lw.watchReturns(s2);
    await t.flush();
    assert.deepEqual(t.sink.calls.slice(4), ['live true']);
    await t.finish();
  });
});

describe('Reflector: a resource without periodic bookmarks (served without the apiserver watch cache)', () => {
  it('a silent stream is not restarted: not live after the window, logged once, kept until the longest watch timeout passed by a window', async () => {
    const { logger, lines } = logLines<{ level: number; msg: string }>();
    const t = await synced({ livenessWindowMs: 180_000, logger });
    await t.clock.step(180_000);
    await t.flush();
    assert.equal(t.s.closed, false, 'a quiet events stream is healthy');
    assert.deepEqual(t.sink.calls, ['replace[a@90]@100', 'live true', 'live false']);
    assert.equal(t.r.status().watchRestarts, 0);
    const infoLines = lines.filter((l) => l.level >= 30 && /silent/.test(l.msg));
    assert.equal(infoLines.length, 1);
    assert.equal(infoLines[0]!.level, 30, 'info, not a warning');
    // An event: live again; the next silence is logged at debug only.
    t.s.push(ev('MODIFIED', cm('a', 120)));
    await t.flush();
    assert.deepEqual(t.sink.calls.slice(3), ['live true', 'update a@120']);
    await t.clock.step(180_000);
    await t.flush();
    assert.deepEqual(t.sink.calls.slice(5), ['live false']);
    assert.equal(lines.filter((l) => l.level >= 30 && /silent/.test(l.msg)).length, 1);
    assert.equal(t.s.closed, false);
    // Every watch ends by its timeoutSeconds (at most 600 s): still open a window later, it is half-open.
    await t.clock.step(600_000 + 180_000 - 360_000 - 1);
    await t.flush();
    assert.equal(t.s.closed, false);
    await t.clock.step(1);
    await t.flush();
    assert.equal(t.s.closed, true);
    assert.equal(t.r.status().periodicBookmarks, false);
    await t.finish();
  });

  it('a periodic bookmark (not an initial-events-end one) switches the resource to the restart rule', async () => {
    const t = await synced({ livenessWindowMs: 180_000 });
    t.s.push(bookmark(105, true));
    await t.flush();
    assert.equal(t.r.status().periodicBookmarks, false, 'an initial-events-end bookmark proves nothing');
    t.s.push(bookmark(110));
    await t.flush();
    assert.equal(t.r.status().periodicBookmarks, true);
    await t.clock.step(180_000);
    await t.flush();
    assert.equal(t.s.closed, true, 'restarted as half-open');
    await t.finish();
  });
});

describe('LivenessWatchdog', () => {
  it('expires once after a full window without touch; a touch pushes the deadline back', async () => {
    const clock = new FakeClock();
    const w = new LivenessWatchdog(clock, 1_000);
    let expired = 0;
    w.arm(() => expired++);
    await clock.step(600);
    w.touch();
    await clock.step(999);
    assert.equal(w.expired, false);
    assert.deepEqual(clock.pendingDelays(), [1], 'the timer slept only the remainder');
    await clock.step(1);
    assert.equal(w.expired, true);
    assert.equal(expired, 1);
    assert.equal(clock.pending(), 0);
  });

  it('disarm stops the timer; arm starts a fresh window', async () => {
    const clock = new FakeClock();
    const w = new LivenessWatchdog(clock, 1_000);
    let expired = 0;
    w.arm(() => expired++);
    await clock.step(1_000);
    assert.equal(w.expired, true);
    w.arm(() => expired++);
    assert.equal(w.expired, false);
    w.disarm();
    assert.equal(clock.pending(), 0);
    await clock.step(5_000);
    assert.equal(expired, 1);
  });
});
