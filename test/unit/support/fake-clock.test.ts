import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../support/fake-clock.ts';

test('FakeClock fires timers in due order and only when due', async () => {
  const c = new FakeClock(1000);
  const fired: string[] = [];
  c.setTimeout(() => fired.push('b@200'), 200);
  c.setTimeout(() => fired.push('a@100'), 100);
  const h = c.setTimeout(() => fired.push('cancelled'), 150);
  c.clearTimeout(h);
  await c.step(99);
  assert.deepEqual(fired, []);
  await c.step(1);
  assert.deepEqual(fired, ['a@100']);
  assert.equal(c.now(), 1100);
  await c.step(500);
  assert.deepEqual(fired, ['a@100', 'b@200']);
  assert.equal(c.pending(), 0);
});

test('FakeClock.sleep resolves after the step and rejects on abort', async () => {
  const c = new FakeClock(0);
  let done = false;
  const p = c.sleep(1000).then(() => {
    done = true;
  });
  await c.step(999);
  assert.equal(done, false);
  await c.step(1);
  await p;
  assert.equal(done, true);
  const ac = new AbortController();
  const q = c.sleep(1000, ac.signal);
  ac.abort(new Error('stop'));
  await assert.rejects(q, /stop/);
  assert.equal(c.pending(), 0);
});
