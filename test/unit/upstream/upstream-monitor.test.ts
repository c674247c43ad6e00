import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { checkUpstream } from '../../../src/upstream/upstream-check.ts';
import { UpstreamMonitor } from '../../../src/upstream/upstream-monitor.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { logLines } from '../../support/log-lines.ts';

type Result = Awaited<ReturnType<typeof checkUpstream>>;

/** A monitor over a scripted check; `calls` records each check's `identity` flag. */
function scripted(results: Result[], intervalMs = 60_000) {
  const clock = new FakeClock(0);
  const { logger: log, lines } = logLines<{ level: number; msg: string }>();
  const calls: Array<{ at: number; identity: boolean }> = [];
  const check: typeof checkUpstream = async (_t, o) => {
    calls.push({ at: clock.now(), identity: o?.identity === true });
    return results.shift() ?? { ok: true, version: 'v1.37.2' };
  };
  const m = new UpstreamMonitor({
    target: { baseUrl: 'https://up', dispatcher: undefined as never, authorization: () => undefined },
    log,
    clock,
    check,
    intervalMs,
  });
  return { clock, lines, calls, m };
}

const refused: Result = { ok: false, reason: 'GET https://up/version: connection refused (ECONNREFUSED)' };
const unauthorized: Result = {
  ok: false,
  reason: "GET https://up/version: 401 Unauthorized: the apiserver rejected the proxy's credentials",
};

describe('UpstreamMonitor', () => {
  it('is not ready before its first check, then answers from the last result', async () => {
    const t = scripted([{ ok: true, version: 'v1.37.2', user: 'system:serviceaccount:kcp:proxy' }]);
    assert.equal(t.m.reason(), 'not checked yet');
    assert.equal(t.m.version(), undefined);
    await t.m.start();
    assert.equal(t.m.reason(), undefined);
    assert.equal(t.m.version(), 'v1.37.2', "the last passed check's gitVersion");
    assert.deepEqual(t.calls, [{ at: 0, identity: true }]);
    assert.deepEqual(
      t.lines.map((l) => l.msg),
      ['upstream check passed'],
    );
    // Healthy: /version only, once per interval.
    await t.clock.step(60_000);
    assert.deepEqual(t.calls[1], { at: 60_000, identity: false });
    assert.equal(t.lines.length, 1, 'a passing re-check logs nothing');
    t.m.stop();
    assert.equal(t.clock.pending(), 0);
  });

  it('while failing: backs off 1 s doubling to 30 s, logs each new reason once, and the recovery', async () => {
    const t = scripted([refused, refused, refused, unauthorized, unauthorized, ...Array(6).fill(refused)]);
    await t.m.start();
    assert.equal(t.m.reason(), refused.reason);
    await t.clock.step(250_000);
    const gaps = t.calls.slice(1).map((c, i) => c.at - t.calls[i]!.at);
    assert.deepEqual(
      gaps.slice(0, 10),
      [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000, 30_000, 30_000],
    );
    assert.ok(
      t.calls.every((c) => c.identity),
      'the SelfSubjectReview is asked while not ready',
    );
    assert.deepEqual(
      t.lines.map((l) => [l.level, l.msg]),
      [
        [40, `upstream check failed: ${refused.reason}`],
        [40, `upstream check failed: ${unauthorized.reason}`],
        [40, `upstream check failed: ${refused.reason}`],
        [30, 'upstream check passed'],
      ],
    );
    assert.equal(t.m.reason(), undefined);
    // A failure after a success backs off from 1 s again; the recovery says "again".
    const t2 = scripted([{ ok: true, version: 'v' }, refused, { ok: true, version: 'v' }]);
    await t2.m.start();
    await t2.clock.step(60_000);
    assert.equal(t2.m.reason(), refused.reason);
    await t2.clock.step(1_000);
    assert.equal(t2.m.reason(), undefined);
    assert.deepEqual(
      t2.lines.map((l) => l.msg),
      [
        'upstream check passed',
        `upstream check failed: ${refused.reason}`,
        'upstream check passed again: ready',
      ],
    );
    t.m.stop();
    t2.m.stop();
  });

  it('never waits longer than the healthy interval while failing', async () => {
    const t = scripted(Array(10).fill(refused), 5_000);
    await t.m.start();
    await t.clock.step(40_000);
    const gaps = t.calls.slice(1).map((c, i) => c.at - t.calls[i]!.at);
    assert.deepEqual(gaps.slice(0, 6), [1_000, 2_000, 4_000, 5_000, 5_000, 5_000]);
    t.m.stop();
  });
});
