import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { Reflector } from '../../../src/reflector/reflector.ts';
import { createLogger } from '../../../src/util/logger.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { bookmark, cm, configMapInfo, ev, FakeListerWatcher, FakeStream, RecordingSink } from './fakes.ts';

/** Lets every pending promise chain (and Writable callbacks) run: a macrotask turn drains all microtasks. */
const drain = () => new Promise((resolve) => setImmediate(resolve));

describe('Reflector: progress log during a large initial sync', () => {
  it('logs objects so far and the rate every progressIntervalMs, then the sync summary', async () => {
    const lines: Record<string, unknown>[] = [];
    const dest = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
        cb();
      },
    });
    const clock = new FakeClock();
    const lw = new FakeListerWatcher();
    const sink = new RecordingSink();
    const r = new Reflector({
      info: configMapInfo,
      lw,
      sink,
      clock,
      random: () => 0.5,
      logger: createLogger({ destination: dest }),
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
