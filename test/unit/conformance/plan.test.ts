import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRuns } from '../../conformance/plan.ts';

describe('planRuns', () => {
  it('runs every mode once per repeat, repeat by repeat', () => {
    assert.deepEqual(
      planRuns(['direct', 'sidecar'], 2).map((r) => `${r.mode}-${r.n}`),
      ['direct-1', 'sidecar-1', 'direct-2', 'sidecar-2'],
    );
  });

  it('runs only the listed runs with --only, in its order, whatever --modes and --repeat say', () => {
    assert.deepEqual(planRuns(['direct', 'sidecar', 'delegated', 'listed'], 3, 'listed-2,direct-3'), [
      { mode: 'listed', n: 2 },
      { mode: 'direct', n: 3 },
    ]);
    // A proxied run alone (no direct first): a part of the matrix, the page is assembled later.
    assert.deepEqual(planRuns(['direct'], 1, 'delegated-1'), [{ mode: 'delegated', n: 1 }]);
  });

  it('refuses an unknown mode, a run number below 1, a repeated entry and an empty list', () => {
    assert.throws(() => planRuns(['direct'], 1, 'proxied-1'), /--only: "proxied-1": expected MODE-N/);
    assert.throws(() => planRuns(['direct'], 1, 'sidecar-0'), /--only: "sidecar-0"/);
    assert.throws(() => planRuns(['direct'], 1, 'sidecar'), /--only: "sidecar"/);
    assert.throws(() => planRuns(['direct'], 1, 'direct-1,direct-1'), /direct-1 is listed twice/);
    assert.throws(() => planRuns(['direct'], 1, ''), /--only: ""/);
  });
});
