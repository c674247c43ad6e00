import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Reflector } from '../../../src/reflector/reflector.ts';
import { SyncProgress } from '../../../src/reflector/sync-progress.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import {
  bookmark,
  cm,
  configMapInfo,
  ev,
  FakeListerWatcher,
  FakeStream,
  RecordingSink,
} from '../../support/fake-lister-watcher.ts';
import { logLines } from '../../support/log-lines.ts';

/** Lets every pending promise chain (and Writable callbacks) run: a macrotask turn drains all microtasks. */
const drain = () => new Promise((resolve) => setImmediate(resolve));

describe('Reflector: progress log during a large initial sync', () => {
  it('logs objects so far and the rate every progressIntervalMs, then the sync summary', async () => {
    const { logger, lines } = logLines();
    const clock = new FakeClock();
    const lw = new FakeListerWatcher();
    const sink = new RecordingSink();
    const r = new Reflector({
      info: configMapInfo,
      lw,
      sink,
      clock,
      random: () => 0.5,
      logger,
      progressIntervalMs: 5_000,
    });
    const s = new FakeStream();
    lw.watchReturns(s);
    const done = r.run();
    await drain();
    const burst = (from: number) =>
      Array.from({ length: 256 }, (_, i) => ev('ADDED', cm(`o${from + i}`, from + i + 1)));
    s.push(...burst(0));
    await drain();
    await clock.step(5_000);
    s.push(...burst(256));
    await drain();
    await clock.step(1_000);
    s.push(bookmark(1000, true));
    await drain();
    const progress = lines.filter((l) => l.msg === 'sync in progress');
    assert.deepEqual(
      progress.map((l) => [l.reflector, l.mode, l.objects, l.elapsedSeconds, l.objectsPerSecond]),
      [['configmaps', 'watch-list', 512, 5, 102]],
    );
    const summary = lines.find((l) => l.msg === 'initial sync complete');
    assert.deepEqual(
      [summary?.mode, summary?.objects, summary?.resourceVersion, summary?.durationMs],
      ['watch-list', 512, '1000', 6000],
    );
    r.stop();
    await done;
  });
});

describe('SyncProgress', () => {
  it('logs at most once per interval, with the elapsed time and rate; objects are counted only then', async () => {
    const { logger, lines } = logLines();
    const clock = new FakeClock();
    const start = clock.now();
    const p = new SyncProgress({
      log: logger,
      clock,
      intervalMs: 5_000,
      mode: 'list',
      start: start - 2_000,
    });
    let reads = 0;
    const count = (n: number) => () => {
      reads++;
      return n;
    };
    p.tick(count(100));
    await clock.step(4_999);
    p.tick(count(200));
    assert.equal(reads, 0);
    await clock.step(1);
    p.tick(count(700));
    await clock.step(1_000);
    p.tick(count(800));
    await drain();
    assert.equal(reads, 1);
    assert.deepEqual(
      lines.map((l) => [l.msg, l.mode, l.objects, l.elapsedSeconds, l.objectsPerSecond]),
      [['sync in progress', 'list', 700, 7, 100]],
    );
  });
});
