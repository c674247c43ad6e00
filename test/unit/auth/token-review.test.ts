import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  selfSubjectReview,
  TOKEN_REVIEW_PATH,
  TokenReviewAuthenticator,
} from '../../../src/auth/token-review.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import {
  type FakeReviewServer,
  startFakeReviewServer,
  tokenReviewAnswer,
} from '../../support/fake-review-server.ts';

describe('TokenReviewAuthenticator', () => {
  let s: FakeReviewServer;
  before(async () => {
    s = await startFakeReviewServer((c) =>
      c.body.spec?.token === 'good'
        ? tokenReviewAnswer('alice', 'u1', ['g'])
        : [201, { status: { authenticated: false, error: 'invalid bearer token' } }],
    );
  });
  after(() => s.close());

  it('sends a TokenReview (no audiences by default) and returns the user', async () => {
    const a = new TokenReviewAuthenticator({ upstream: s, ttlMs: 0 });
    const r = await a.authenticate('good');
    assert.deepEqual(r, {
      authenticated: true,
      user: { username: 'alice', uid: 'u1', groups: ['g'], extra: {} },
      cached: false,
    });
    assert.equal(s.calls.at(-1)!.path, TOKEN_REVIEW_PATH);
    assert.deepEqual(s.calls.at(-1)!.body, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token: 'good' },
    });
    assert.deepEqual(await a.authenticate('bad'), {
      authenticated: false,
      error: 'invalid bearer token',
      cached: false,
    });
  });

  it('caches success AND failure for the TTL, then asks again; counts hits and misses', async () => {
    const clock = new FakeClock();
    const lookups: boolean[] = [];
    const a = new TokenReviewAuthenticator({
      upstream: s,
      ttlMs: 10_000,
      clock,
      onCacheLookup: (h) => lookups.push(h),
    });
    const n = s.calls.length;
    await a.authenticate('good');
    await a.authenticate('bad');
    assert.equal((await a.authenticate('good')).cached, true);
    assert.equal((await a.authenticate('bad')).cached, true);
    assert.equal(s.calls.length - n, 2);
    await clock.step(10_001);
    assert.equal((await a.authenticate('good')).cached, false);
    assert.equal(s.calls.length - n, 3);
    assert.deepEqual(lookups, [false, false, true, true, false]);
  });

  it('shares one review between concurrent requests of the same token', async () => {
    const a = new TokenReviewAuthenticator({ upstream: s, ttlMs: 0 });
    const n = s.calls.length;
    await Promise.all([a.authenticate('good'), a.authenticate('good'), a.authenticate('good')]);
    assert.equal(s.calls.length - n, 1);
  });

  it('a failed review throws and is not cached', async () => {
    const a = new TokenReviewAuthenticator({ upstream: s, ttlMs: 10_000 });
    const before = s.answer;
    s.answer = () => [503, { kind: 'Status', code: 503, message: 'down' }];
    await assert.rejects(a.authenticate('good'));
    s.answer = before;
    assert.equal((await a.authenticate('good')).authenticated, true);
  });

  it('audiences: sent, and an answer for other audiences is unauthenticated', async () => {
    const a = new TokenReviewAuthenticator({ upstream: s, ttlMs: 0, audiences: ['kcp'] });
    const before = s.answer;
    s.answer = () => [
      201,
      { status: { authenticated: true, user: { username: 'alice' }, audiences: ['other'] } },
    ];
    assert.equal((await a.authenticate('good')).authenticated, false);
    assert.deepEqual(s.calls.at(-1)!.body.spec, { token: 'good', audiences: ['kcp'] });
    s.answer = () => [
      201,
      { status: { authenticated: true, user: { username: 'alice' }, audiences: ['kcp'] } },
    ];
    assert.equal((await a.authenticate('good')).authenticated, true);
    s.answer = before;
  });
});

describe('selfSubjectReview', () => {
  it("returns the proxy's userInfo", async () => {
    const s = await startFakeReviewServer(() => [
      201,
      { status: { userInfo: { username: 'system:serviceaccount:a:b', uid: 'x' } } },
    ]);
    try {
      assert.deepEqual(await selfSubjectReview(s), {
        username: 'system:serviceaccount:a:b',
        uid: 'x',
        groups: [],
        extra: {},
      });
      assert.equal(s.calls[0]!.path, '/apis/authentication.k8s.io/v1/selfsubjectreviews');
    } finally {
      await s.close();
    }
  });
});
