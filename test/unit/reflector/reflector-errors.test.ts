import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  errText,
  isRefusedForNow,
  isResourceVersionUnavailable,
  relistReasonOf,
} from '../../../src/reflector/reflector-errors.ts';
import {
  ConnectionRefusedError,
  UpstreamError,
  VeryShortWatchError,
  WatchListIncompleteError,
} from '../../../src/util/errors.ts';

const tooLarge = new UpstreamError(504, 'Too large resource version', {
  reason: 'Timeout',
  code: 504,
  details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] },
});

describe('reflector error classification', () => {
  it('410 and too-large RV mean the RV is unavailable; nothing else does', () => {
    assert.equal(isResourceVersionUnavailable(new UpstreamError(410, 'Expired')), true);
    assert.equal(isResourceVersionUnavailable(new UpstreamError(500, 'x', { reason: 'Gone' })), true);
    assert.equal(isResourceVersionUnavailable(tooLarge), true);
    assert.equal(isResourceVersionUnavailable(new UpstreamError(500, 'boom')), false);
    assert.equal(isResourceVersionUnavailable(new Error('Expired')), false);
  });

  it('connection refused (wrapped or in a cause chain) and 429 are refusals for now', () => {
    const raw = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    assert.equal(isRefusedForNow(new ConnectionRefusedError(raw.message, { cause: raw })), true);
    assert.equal(isRefusedForNow(new TypeError('fetch failed', { cause: raw })), true);
    assert.equal(isRefusedForNow(new UpstreamError(429, 'slow down')), true);
    assert.equal(isRefusedForNow(new UpstreamError(503, 'unavailable')), false);
  });

  it('a very short watch relists as very_short_watch, any other error as watch_error', () => {
    assert.equal(relistReasonOf(new VeryShortWatchError('very short watch')), 'very_short_watch');
    assert.equal(relistReasonOf(new WatchListIncompleteError('ended')), 'watch_error');
    assert.equal(relistReasonOf(new UpstreamError(403, 'forbidden')), 'watch_error');
  });

  it('errText is `Name: message`', () => {
    assert.equal(errText(new VeryShortWatchError('x')), 'VeryShortWatchError: x');
    assert.equal(errText(new UpstreamError(500, 'boom')), 'UpstreamError: boom');
    assert.equal(errText('plain'), 'plain');
  });
});
