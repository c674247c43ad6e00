import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isConnectionRefused,
  isExpired,
  isInternalError,
  isTooLargeResourceVersion,
  isTooManyRequests,
} from '../../../src/upstream/api-errors.ts';
import { ConnectionRefusedError, UpstreamError } from '../../../src/util/errors.ts';

describe('upstream error classification (apimachinery apierrors)', () => {
  it('UpstreamError.fromBody keeps a Status body and its reason; other bodies go into the message', () => {
    const e = UpstreamError.fromBody(
      410,
      '{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}',
      'GET /api/v1/pods',
    );
    assert.deepEqual(
      [e.code, e.statusCode, e.reason, e.message, e.status?.kind],
      ['KCP_ERR_UPSTREAM_STATUS', 410, 'Expired', 'GET /api/v1/pods: 410 too old', 'Status'],
    );
    const t = UpstreamError.fromBody(502, 'Bad Gateway', 'GET /api');
    assert.deepEqual([t.reason, t.message, t.status], ['', 'GET /api: 502 Bad Gateway', undefined]);
    const w = UpstreamError.fromStatus({ reason: 'Expired', message: 'too old resource version: 1 (5)' });
    assert.deepEqual([w.statusCode, w.message], [500, 'watch error: 500 too old resource version: 1 (5)']);
  });

  it('classifies by code and reason as client-go does', () => {
    const tooLarge = new UpstreamError(504, 'Too large resource version: 9, current: 5');
    assert.deepEqual(
      [isExpired, isTooLargeResourceVersion, isTooManyRequests, isInternalError].map((f) => [
        f(new UpstreamError(410, 'x')),
        f(new UpstreamError(500, 'x', { reason: 'Expired' })),
        f(tooLarge),
        f(new UpstreamError(429, 'x')),
        f(new UpstreamError(503, 'x')),
        f(new Error('x')),
      ]),
      [
        [true, true, false, false, false, false],
        [false, false, true, false, false, false],
        [false, false, false, true, false, false],
        [false, true, false, false, true, false],
      ],
    );
  });

  it('connection refused: the catalogue error, or ECONNREFUSED in a cause chain or an AggregateError', () => {
    const raw = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    assert.equal(isConnectionRefused(new ConnectionRefusedError('connect ECONNREFUSED 127.0.0.1:1')), true);
    assert.equal(isConnectionRefused(new TypeError('fetch failed', { cause: raw })), true);
    assert.equal(isConnectionRefused(new AggregateError([new Error('x'), raw])), true);
    assert.equal(isConnectionRefused(Object.assign(new Error('reset'), { code: 'ECONNRESET' })), false);
  });
});
