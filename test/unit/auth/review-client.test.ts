import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createReview } from '../../../src/auth/review-client.ts';
import { UpstreamError } from '../../../src/util/errors.ts';
import { type FakeReviewServer, startFakeReviewServer } from '../../support/fake-review-server.ts';

describe('createReview', () => {
  let s: FakeReviewServer;
  before(async () => {
    s = await startFakeReviewServer(() => [201, { kind: 'TokenReview', status: { authenticated: true } }]);
  });
  after(() => s.close());

  it("POSTs the JSON body with the proxy's credential and returns the answer", async () => {
    const r = await createReview<{ kind: string }>(s, '/apis/x/v1/things', { kind: 'Thing' });
    assert.equal(r.kind, 'TokenReview');
    assert.deepEqual(s.calls.at(-1), {
      path: '/apis/x/v1/things',
      authorization: 'Bearer proxy-token',
      body: { kind: 'Thing' },
    });
  });

  it('throws UpstreamError with the Status of a non-2xx answer', async () => {
    s.answer = () => [403, { kind: 'Status', reason: 'Forbidden', message: 'no', code: 403 }];
    await assert.rejects(
      createReview(s, '/p', {}),
      (e: unknown) => e instanceof UpstreamError && e.statusCode === 403 && e.reason === 'Forbidden',
    );
  });
});
