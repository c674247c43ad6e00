import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ProxyIdentity } from '../../../src/auth/proxy-identity.ts';
import { TokenReviewAuthenticator } from '../../../src/auth/token-review.ts';
import {
  type FakeReviewServer,
  startFakeReviewServer,
  tokenReviewAnswer,
} from '../../support/fake-review-server.ts';

const SA = 'system:serviceaccount:app:ctrl';

describe('ProxyIdentity (simple mode: same identity, not same bytes)', () => {
  let s: FakeReviewServer;
  let proxyToken = 'proxy-token';
  before(async () => {
    s = await startFakeReviewServer((c) => {
      if (c.path.endsWith('/selfsubjectreviews'))
        return [201, { status: { userInfo: { username: SA, uid: 'sa-uid' } } }];
      const t = c.body.spec?.token;
      if (t === 'rotated') return tokenReviewAnswer(SA, 'sa-uid');
      if (t === 'same-name-other-uid') return tokenReviewAnswer(SA, 'recreated');
      if (t === 'forbidden') return [403, { kind: 'Status', code: 403, reason: 'Forbidden' }];
      return tokenReviewAnswer('someone-else', 'x');
    });
    s.authorization = () => `Bearer ${proxyToken}`;
  });
  after(() => s.close());
  let t = 0;
  const identity = () =>
    new ProxyIdentity({
      upstream: s,
      tokens: new TokenReviewAuthenticator({ upstream: s, ttlMs: 10_000 }),
      now: () => t,
    });

  it("the proxy's own token bytes: same, without any API call", async () => {
    const p = identity();
    const n = s.calls.length;
    assert.equal(await p.sameAsAuthorization('Bearer proxy-token'), true);
    assert.equal(s.calls.length, n);
  });

  it('the previous token after a rotation of the file is still the same identity, without a call', async () => {
    const p = identity();
    proxyToken = 'old';
    await p.sameAsAuthorization('Bearer old');
    proxyToken = 'new';
    // The proxy re-reads its own credential at most once a second.
    t += 1000;
    const n = s.calls.length;
    assert.equal(await p.sameAsAuthorization('Bearer old'), true);
    assert.equal(await p.sameAsAuthorization('Bearer new'), true);
    assert.equal(s.calls.length, n);
    proxyToken = 'proxy-token';
  });

  it('other bytes: a TokenReview against the SelfSubjectReview identity (username AND uid)', async () => {
    const p = identity();
    assert.equal(await p.sameAsAuthorization('Bearer rotated'), true);
    assert.equal(await p.sameAsAuthorization('Bearer same-name-other-uid'), false);
    assert.equal(await p.sameAsAuthorization('Bearer stranger'), false);
    assert.equal(await p.sameAsAuthorization('Basic dTpw'), false);
  });

  it("the token is parsed as the apiserver's bearer authenticator (issue 29)", async () => {
    const p = identity();
    // The same identity's token after a single space, whatever follows it.
    assert.equal(await p.sameAsAuthorization('bearer rotated junk'), true);
    // A tab or two spaces: the apiserver sees no token (anonymous), so neither is the proxy's identity.
    const n = s.calls.length;
    assert.equal(await p.sameAsAuthorization('Bearer\trotated'), false);
    assert.equal(await p.sameAsAuthorization('Bearer  rotated'), false);
    assert.equal(s.calls.length, n);
  });

  it('a forbidden TokenReview is another identity, and is not asked again for each request', async () => {
    const p = identity();
    assert.equal(await p.sameAsAuthorization('Bearer forbidden'), false);
    const n = s.calls.length;
    assert.equal(await p.sameAsAuthorization('Bearer forbidden'), false);
    assert.equal(s.calls.length, n);
  });

  it('a client certificate user is compared by username and uid', async () => {
    const p = identity();
    assert.equal(await p.sameAsUser({ username: SA, uid: 'sa-uid', groups: [], extra: {} }), true);
    assert.equal(await p.sameAsUser({ username: SA, uid: '', groups: [], extra: {} }), false);
  });
});
