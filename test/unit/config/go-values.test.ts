import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GO_BOOL, parseGoDuration } from '../../../src/config/go-values.ts';

describe('Go flag values', () => {
  it('time.ParseDuration, in ms', () => {
    assert.equal(parseGoDuration('10s'), 10_000);
    assert.equal(parseGoDuration('1m30s'), 90_000);
    assert.equal(parseGoDuration('1.5h'), 5_400_000);
    assert.equal(parseGoDuration('250ms'), 250);
    assert.equal(parseGoDuration('0'), 0);
    for (const bad of ['10', '', 's', '-1s', '1d']) assert.equal(parseGoDuration(bad), undefined, bad);
  });
  it('strconv.ParseBool', () => {
    assert.equal(GO_BOOL.True, true);
    assert.equal(GO_BOOL['0'], false);
    assert.equal(GO_BOOL.yes, undefined);
  });
});
