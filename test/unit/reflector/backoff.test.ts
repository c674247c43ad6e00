import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff } from '../../../src/reflector/backoff.ts';
import { FakeClock } from '../../support/fake-clock.ts';

describe('Backoff (client-go reflector defaults)', () => {
  it('sleeps are uniform in [d, 2d) for d = 0.8, 1.6, 3.2, … s, capped at [30, 60) s', () => {
    const clock = new FakeClock();
    const lo = new Backoff({ clock, random: () => 0 });
    const hi = new Backoff({ clock, random: () => 0.999999 });
    const expectedLo = [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000];
    assert.deepEqual(
      expectedLo.map(() => lo.next()),
      expectedLo,
    );
    const highs = expectedLo.map(() => hi.next());
    highs.forEach((v, i) => {
      const d = expectedLo[i]!;
      assert.ok(v >= d && v < 2 * d, `step ${i}: ${v} in [${d}, ${2 * d})`);
      assert.equal(Math.round(v), Math.round(d * 1.999999));
    });
  });

  it('resets to 0.8 s after more than 2 min without a backoff, not before', async () => {
    const clock = new FakeClock();
    const b = new Backoff({ clock, random: () => 0 });
    for (let i = 0; i < 7; i++) b.next();
    assert.equal(b.next(), 30000);
    await clock.step(120_000);
    assert.equal(b.next(), 30000, 'exactly 2 min is not enough');
    await clock.step(120_001);
    assert.deepEqual([b.next(), b.next(), b.next()], [800, 1600, 3200]);
  });

  it('jitter draws from the injected random source', () => {
    const clock = new FakeClock();
    const seq = [0.25, 0.5, 0.75];
    const b = new Backoff({ clock, random: () => seq.shift()! });
    assert.deepEqual([b.next(), b.next(), b.next()], [1000, 2400, 5600]);
  });
});
