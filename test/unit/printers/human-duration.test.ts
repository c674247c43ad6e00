/**
 * `humanDuration` / `shortHumanDuration` against the cases of apimachinery's own
 * `pkg/util/duration/duration_test.go` (v0.37.2), and `since`'s `<unknown>` for a zero time.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { humanDuration, shortHumanDuration, since } from '../../../src/printers/human-duration.ts';

const S = 1e9;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe('humanDuration (duration.HumanDuration)', () => {
  const cases: [number, string][] = [
    [1 * S, '1s'],
    [70 * S, '70s'],
    [190 * S, '3m10s'],
    [70 * M, '70m'],
    [47 * 60 * M, '47h'],
    [49 * 60 * M, '2d1h'],
    [(8 * 24 + 2) * 60 * M, '8d'],
    [367 * 24 * 60 * M, '367d'],
    [(365 * 2 * 24 + 25) * 60 * M, '2y1d'],
    [(365 * 8 * 24 + 2) * 60 * M, '8y'],
    [-1.5 * S, '0s'],
    [-2 * S, '<invalid>'],
    [119 * S, '119s'],
    [120 * S, '2m'],
    [9 * M + 59 * S, '9m59s'],
    [10 * M, '10m'],
    [3 * H, '3h'],
    [7 * H + 59 * M, '7h59m'],
    [8 * H, '8h'],
    [2 * D, '2d'],
    [7 * D + 23 * H, '7d23h'],
  ];
  for (const [d, want] of cases) it(`${d / S}s → ${want}`, () => assert.equal(humanDuration(d), want));
});

describe('shortHumanDuration (duration.ShortHumanDuration)', () => {
  const cases: [number, string][] = [
    [1 * S, '1s'],
    [70 * S, '1m'],
    [70 * M, '1h'],
    [25 * H, '1d'],
    [366 * D, '1y'],
    [-2 * S, '<invalid>'],
    [-1.5 * S, '0s'],
  ];
  for (const [d, want] of cases) it(`${d / S}s → ${want}`, () => assert.equal(shortHumanDuration(d), want));
});

describe('since (translateTimestampSince)', () => {
  it('absent, empty or Go zero time: <unknown>; else the age at now', () => {
    const now = Date.parse('2026-01-01T00:10:00Z');
    assert.equal(since(undefined, now), '<unknown>');
    assert.equal(since('', now), '<unknown>');
    assert.equal(since('0001-01-01T00:00:00Z', now), '<unknown>');
    assert.equal(since('2026-01-01T00:00:00Z', now), '10m');
    assert.equal(since('2026-01-01T00:08:30Z', now), '90s');
  });
});
