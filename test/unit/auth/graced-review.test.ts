import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GracedReview } from '../../../src/auth/graced-review.ts';
import { OutageGrace } from '../../../src/auth/outage-grace.ts';
import { UpstreamError } from '../../../src/util/errors.ts';
import { FakeClock } from '../../support/fake-clock.ts';

describe('GracedReview', () => {
  it('sends one review for concurrent callers of a key and records its answer once', async () => {
    const grace = new OutageGrace<{ v: number }>({ graceMs: 0, clock: new FakeClock() });
    const reviews = new GracedReview({ grace, outage: undefined, onGrace: undefined });
    let sent = 0;
    let recorded = 0;
    let answer: (v: { v: number }) => void = () => {};
    const review = () => {
      sent++;
      return new Promise<{ v: number }>((r) => {
        answer = r;
      });
    };
    const both = Promise.all([
      reviews.decide('k', review, () => recorded++),
      reviews.decide('k', review, () => recorded++),
    ]);
    answer({ v: 7 });
    assert.deepEqual(await both, [
      { value: { v: 7 }, grace: false },
      { value: { v: 7 }, grace: false },
    ]);
    assert.deepEqual({ sent, recorded }, { sent: 1, recorded: 1 });
  });

  it('on a failed review answers the allowed answer within its grace, else throws the failure', async () => {
    const clock = new FakeClock();
    const grace = new OutageGrace<{ v: number }>({ graceMs: 60_000, clock });
    const told: string[] = [];
    const reviews = new GracedReview({ grace, outage: undefined, onGrace: (e) => told.push(e.message) });
    await reviews.decide(
      'k',
      async () => ({ v: 1 }),
      (v) => grace.allowed('k', v, 10_000),
    );
    const down = async (): Promise<{ v: number }> => {
      throw new UpstreamError(503, 'down');
    };
    assert.deepEqual(await reviews.decide('k', down, () => {}), { value: { v: 1 }, grace: true });
    await assert.rejects(
      reviews.decide('other', down, () => {}),
      /down/,
    );
    assert.deepEqual(told, ['down']);
  });
});
