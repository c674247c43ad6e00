import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  COMPACTION_IDLE_MS,
  COMPACTION_POLL_MS,
  COMPACTION_WAIT_MS,
  CompactionFloor,
  type ServedWindow,
} from '../../../src/cache/compaction-floor.ts';
import type { CompactionAnswer } from '../../../src/reflector/compaction-probe.ts';
import { FakeClock, flushMicrotasks } from '../../support/fake-clock.ts';

/**
 * A scripted upstream: etcd compacted every revision below `compactedBelow` (etcd keeps the
 * compaction revision itself); `answer` overrides the next answers; `hold` keeps probes pending.
 */
class FakeCompactingUpstream {
  compactedBelow = 0n;
  probes: bigint[] = [];
  answers: CompactionAnswer[] = [];
  hold = false;
  #held: Array<() => void> = [];

  probe = async (rv: bigint, signal: AbortSignal): Promise<CompactionAnswer> => {
    this.probes.push(rv);
    if (this.hold) {
      await new Promise<void>((r) => {
        this.#held.push(r);
        signal.addEventListener('abort', () => r(), { once: true });
      });
      if (signal.aborted) return 'unknown';
    }
    return this.answers.shift() ?? (rv < this.compactedBelow ? 'compacted' : 'available');
  };

  release(): void {
    this.hold = false;
    for (const r of this.#held.splice(0)) r();
  }
}

/** A floor over a window [100, 200]; `null`: a cache not synced yet. */
function setup(window: ServedWindow | null = { start: 100n, current: 200n }) {
  const clock = new FakeClock();
  const up = new FakeCompactingUpstream();
  const raised: bigint[] = [];
  const answers: CompactionAnswer[] = [];
  const w: { current: ServedWindow | undefined } = { current: window ?? undefined };
  const floor = new CompactionFloor({
    probe: up.probe,
    clock,
    window: () => w.current,
    onRaise: (f) => raised.push(f),
    onProbe: (a) => answers.push(a),
  });
  return { clock, up, floor, raised, answers, w };
}

describe('CompactionFloor (cache/compaction-floor.ts)', () => {
  it('polls nothing until an Exact or continue read asks', async () => {
    const { clock, up, floor } = setup();
    await clock.step(10 * COMPACTION_POLL_MS);
    assert.deepEqual(up.probes, []);
    assert.equal(clock.pending(), 0);
    assert.equal(floor.floor, 0n);
  });

  it('the first read waits for one probe at the window start; reads within a poll period do not probe', async () => {
    const { clock, up, floor } = setup();
    assert.equal(await floor.compacted(150n), false);
    assert.deepEqual(up.probes, [100n]);
    await clock.step(COMPACTION_POLL_MS - 1);
    // Two concurrent reads, no probe.
    assert.deepEqual(await Promise.all([floor.compacted(100n), floor.compacted(180n)]), [false, false]);
    assert.deepEqual(up.probes, [100n]);
  });

  it('a 410 at the window start: a binary search finds the highest compacted RV, the floor', async () => {
    const { clock, up, floor, raised, answers } = setup();
    assert.equal(await floor.compacted(150n), false);
    // etcd compacts up to 163 (163 itself stays readable).
    up.compactedBelow = 163n;
    up.probes = [];
    answers.length = 0;
    await clock.step(COMPACTION_POLL_MS);
    assert.equal(floor.floor, 162n);
    assert.equal(up.probes[0], 100n, 'the oldest RV the cache serves first');
    // log2 of the window (101 RVs) probes after the first.
    assert.ok(up.probes.length <= 9, `${up.probes.length} probes: ${up.probes.join(',')}`);
    assert.deepEqual(raised, [162n], 'told once per poll, the final floor');
    assert.equal(answers.length, up.probes.length);
    // At or below the floor: upstream, at once; above it: the cache.
    up.probes = [];
    assert.equal(await floor.compacted(162n), true);
    assert.equal(await floor.compacted(120n), true);
    assert.equal(await floor.compacted(163n), false);
    assert.deepEqual(up.probes, []);
  });

  it('the next poll starts just above the floor; a floor that did not move costs one probe', async () => {
    const { clock, up, floor } = setup();
    up.compactedBelow = 131n;
    assert.equal(await floor.compacted(150n), false);
    assert.equal(floor.floor, 130n);
    up.probes = [];
    await clock.step(COMPACTION_POLL_MS);
    assert.deepEqual(up.probes, [131n]);
    // The next compaction: searched from the floor up.
    up.compactedBelow = 190n;
    up.probes = [];
    await clock.step(COMPACTION_POLL_MS);
    assert.equal(up.probes[0], 131n);
    assert.equal(floor.floor, 189n);
    assert.equal(await floor.compacted(150n), true);
  });

  it('everything up to the current RV compacted: the floor is the current RV', async () => {
    const { floor, up } = setup({ start: 100n, current: 110n });
    up.compactedBelow = 500n;
    assert.equal(await floor.compacted(110n), true);
    assert.equal(floor.floor, 110n);
  });

  it('polls every period while reads come, stops when idle; the first read after that waits for a poll again', async () => {
    const { clock, up, floor } = setup();
    await floor.compacted(150n);
    for (let t = 0; t < COMPACTION_IDLE_MS; t += COMPACTION_POLL_MS) await clock.step(COMPACTION_POLL_MS);
    const polls = up.probes.length;
    assert.ok(polls >= COMPACTION_IDLE_MS / COMPACTION_POLL_MS - 1, `${polls} polls`);
    assert.equal(floor.polling, false);
    assert.equal(clock.pending(), 0);
    await clock.step(10 * COMPACTION_POLL_MS);
    assert.equal(up.probes.length, polls, 'no poll while idle');
    // A compaction while idle is seen by the next read before it is answered.
    up.compactedBelow = 161n;
    assert.equal(await floor.compacted(150n), true);
    assert.equal(floor.floor, 160n);
    assert.equal(floor.polling, true);
  });

  it('a read waits for a stale floor at most COMPACTION_WAIT_MS; the floor as it is decides', async () => {
    const { clock, up, floor } = setup();
    up.hold = true;
    let answer: boolean | undefined;
    void floor.compacted(150n).then((a) => {
      answer = a;
    });
    await flushMicrotasks();
    assert.equal(answer, undefined);
    await clock.step(COMPACTION_WAIT_MS);
    assert.equal(answer, false);
    // The probe in flight is shared: a second read joins it (no second probe).
    void floor.compacted(150n);
    await flushMicrotasks();
    assert.deepEqual(up.probes, [100n]);
    up.release();
    await flushMicrotasks();
  });

  it('a client that leaves stops its own wait only', async () => {
    const { up, floor } = setup();
    up.hold = true;
    const ac = new AbortController();
    const read = floor.compacted(150n, ac.signal);
    ac.abort();
    assert.equal(await read, false);
    up.compactedBelow = 200n;
    up.release();
    await floor.poll();
    assert.equal(floor.floor, 199n, 'the poll went on for the others');
  });

  it('a read outside the window (forwarded anyway) neither waits nor arms a poll', async () => {
    const { clock, up, floor } = setup();
    assert.equal(await floor.compacted(99n), false);
    assert.equal(await floor.compacted(201n), false);
    assert.deepEqual(up.probes, []);
    assert.equal(clock.pending(), 0);
  });

  it('an unknown answer (an error, the deadline) leaves the floor and ends the poll', async () => {
    const { clock, up, floor } = setup();
    up.compactedBelow = 150n;
    up.answers = ['compacted', 'unknown'];
    assert.equal(await floor.compacted(100n), true);
    assert.equal(floor.floor, 100n);
    assert.equal(up.probes.length, 2);
    // Not asked again within the period; the next poll resumes the search.
    assert.equal(await floor.compacted(140n), false);
    assert.equal(up.probes.length, 2);
    await clock.step(COMPACTION_POLL_MS);
    assert.equal(floor.floor, 149n);
  });

  it('before the first snapshot nothing is probed; stop() aborts the probe and the timer', async () => {
    const { clock, up, floor, w } = setup(null);
    assert.equal(await floor.compacted(150n), false);
    assert.deepEqual(up.probes, []);
    assert.equal(clock.pending(), 0, 'not armed');
    w.current = { start: 100n, current: 200n };
    up.hold = true;
    void floor.compacted(150n);
    await flushMicrotasks();
    assert.deepEqual(up.probes, [100n]);
    floor.stop();
    await flushMicrotasks();
    assert.equal(clock.pending(), 0);
    up.compactedBelow = 500n;
    assert.equal(await floor.compacted(150n), false);
    await clock.step(10 * COMPACTION_POLL_MS);
    assert.deepEqual(up.probes, [100n]);
  });
});
