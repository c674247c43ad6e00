import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newRetryWithDeadline } from '../../../src/reflector/retry-with-deadline.ts';
import { isInternalError } from '../../../src/upstream/api-errors.ts';
import { UpstreamError } from '../../../src/util/errors.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { cm, ev, page, synced } from '../../support/fake-lister-watcher.ts';

describe('Reflector: retry with deadline', () => {
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
});

describe('newRetryWithDeadline (client-go retry_with_deadline.go)', () => {
  const internal = new UpstreamError(500, 'boom');
  const other = new UpstreamError(404, 'not found');
  const make = (maxRetryDurationMs: number, clock: FakeClock) =>
    newRetryWithDeadline({
      maxRetryDurationMs,
      minResetPeriodMs: 60_000,
      isRetryable: isInternalError,
      clock,
    });

  it('retries while the first error of a run is at most the deadline old, then resets', async () => {
    const clock = new FakeClock();
    const r = make(30_000, clock);
    r.after(internal);
    assert.equal(r.shouldRetry(), true);
    await clock.step(30_000);
    r.after(internal);
    assert.equal(r.shouldRetry(), true, 'exactly at the deadline');
    await clock.step(1);
    r.after(internal);
    assert.equal(r.shouldRetry(), false, 'past the deadline');
    // The run was reset: the next error starts a new one.
    r.after(internal);
    assert.equal(r.shouldRetry(), true);
  });

  it('a run ends after more than the reset period without a retryable error', async () => {
    const clock = new FakeClock();
    const r = make(30_000, clock);
    r.after(internal);
    await clock.step(25_000);
    r.after(internal);
    await clock.step(60_000);
    r.after(internal);
    assert.equal(r.shouldRetry(), false, 'not quiet for more than 60 s: the run began 85 s ago');
    r.after(internal);
    await clock.step(60_001);
    r.after(internal);
    assert.equal(r.shouldRetry(), true, 'quiet for 60.001 s: a new run');
  });

  it('ignores errors that are not retryable; a deadline ≤ 0 never retries', () => {
    const clock = new FakeClock();
    const r = make(30_000, clock);
    r.after(other);
    assert.equal(r.shouldRetry(), false, 'nothing recorded');
    const never = make(0, clock);
    never.after(internal);
    assert.equal(never.shouldRetry(), false);
  });
});
