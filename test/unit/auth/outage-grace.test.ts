import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isReviewOutage, OutageGrace } from '../../../src/auth/outage-grace.ts';
import type { ReviewUpstream } from '../../../src/auth/review-client.ts';
import { SubjectAccessReviewAuthorizer } from '../../../src/auth/subject-access-review.ts';
import { TokenReviewAuthenticator } from '../../../src/auth/token-review.ts';
import { UpstreamError } from '../../../src/util/errors.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import {
  type FakeReviewServer,
  sarAnswer,
  startFakeReviewServer,
  tokenReviewAnswer,
} from '../../support/fake-review-server.ts';

const TTL = 10_000;
const GRACE = 60_000;

describe('isReviewOutage', () => {
  it('network errors and 5xx answers are outages; 4xx answers and garbled bodies are not', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    assert.equal(isReviewOutage(refused), true);
    assert.equal(isReviewOutage(new UpstreamError(503, 'down')), true);
    assert.equal(isReviewOutage(new UpstreamError(500, 'etcd')), true);
    assert.equal(isReviewOutage(new UpstreamError(401, 'Unauthorized')), false);
    assert.equal(isReviewOutage(new UpstreamError(403, 'forbidden')), false);
    assert.equal(isReviewOutage(new UpstreamError(429, 'slow down')), false);
    assert.equal(isReviewOutage(new SyntaxError('Unexpected token')), false);
    assert.equal(isReviewOutage('a string'), false);
  });
});

describe('OutageGrace', () => {
  const down = new UpstreamError(503, 'down');
  it('keeps an allowed answer until TTL + grace (inclusive, as lru-cache TTLs), not one millisecond more', async () => {
    const clock = new FakeClock();
    const g = new OutageGrace<{ v: number }>({ graceMs: GRACE, clock });
    g.allowed('k', { v: 1 }, TTL);
    await clock.step(TTL + GRACE);
    assert.deepEqual(g.reuse('k', down), { v: 1 });
    await clock.step(1);
    assert.equal(g.reuse('k', down), undefined);
  });
  it('a denial forgets the allowed answer; an unknown key and a 4xx failure reuse nothing', () => {
    const g = new OutageGrace<{ v: number }>({ graceMs: GRACE, clock: new FakeClock() });
    g.allowed('k', { v: 1 }, TTL);
    assert.equal(g.reuse('k', new UpstreamError(403, 'forbidden')), undefined);
    assert.equal(g.reuse('other', down), undefined);
    g.denied('k');
    assert.equal(g.reuse('k', down), undefined);
  });
  it('grace 0 keeps nothing; the keys are bounded by max (least recently used dropped)', () => {
    const off = new OutageGrace<{ v: number }>({ graceMs: 0 });
    off.allowed('k', { v: 1 }, TTL);
    assert.equal(off.reuse('k', down), undefined);
    assert.equal(off.size, 0);
    const g = new OutageGrace<{ v: number }>({ graceMs: GRACE, max: 3, clock: new FakeClock() });
    for (let i = 0; i < 10; i++) g.allowed(`k${i}`, { v: i }, TTL);
    assert.equal(g.size, 3);
    assert.equal(g.reuse('k0', down), undefined);
    assert.deepEqual(g.reuse('k9', down), { v: 9 });
  });
});

/** A review upstream whose address a test can switch to a closed port (connection refused). */
function switchable(s: FakeReviewServer): ReviewUpstream & { refuse: boolean } {
  return {
    refuse: false,
    get baseUrl() {
      return this.refuse ? 'http://127.0.0.1:1' : s.baseUrl;
    },
    dispatcher: s.dispatcher,
    authorization: () => s.authorization(),
  };
}

describe('outage grace of TokenReview (allowed / denied / unknown token)', () => {
  let s: FakeReviewServer;
  before(async () => {
    s = await startFakeReviewServer((c) =>
      c.body.spec?.token === 'bad'
        ? [201, { status: { authenticated: false, error: 'invalid bearer token' } }]
        : tokenReviewAnswer(`user-${String(c.body.spec?.token)}`),
    );
  });
  after(() => s.close());

  it('reuses an authenticated answer within TTL + grace while reviews are refused; never a denial or an unseen token', async () => {
    const clock = new FakeClock();
    const up = switchable(s);
    const graced: string[] = [];
    const a = new TokenReviewAuthenticator({
      upstream: up,
      ttlMs: TTL,
      outageGraceMs: GRACE,
      clock,
      onGrace: (e) => graced.push(e.message),
    });
    assert.equal((await a.authenticate('good')).authenticated, true);
    assert.equal((await a.authenticate('bad')).authenticated, false);
    up.refuse = true;
    await clock.step(TTL + 1);
    // Allowed: reused, flagged as grace, the error handed to onGrace.
    assert.deepEqual(await a.authenticate('good'), {
      authenticated: true,
      user: { username: 'user-good', uid: '', groups: [], extra: {} },
      cached: true,
      grace: true,
    });
    assert.equal(graced.length, 1);
    assert.match(graced[0]!, /ECONNREFUSED|connect/);
    // Denied: not extended. Never seen: never admitted.
    await assert.rejects(a.authenticate('bad'));
    await assert.rejects(a.authenticate('never-seen'));
    // The bound: TTL + grace after the answer.
    await clock.step(GRACE - 1);
    assert.equal((await a.authenticate('good')).grace, true);
    await clock.step(1);
    await assert.rejects(a.authenticate('good'));
    assert.equal(graced.length, 2);
  });

  it('grace 0 (the default): a refused review throws as before', async () => {
    const clock = new FakeClock();
    const up = switchable(s);
    const a = new TokenReviewAuthenticator({ upstream: up, ttlMs: TTL, clock });
    await a.authenticate('good');
    up.refuse = true;
    await clock.step(TTL + 1);
    await assert.rejects(a.authenticate('good'));
  });

  it('a 5xx is an outage, a 403 answer is not; a later denial of the token ends its grace', async () => {
    const clock = new FakeClock();
    const a = new TokenReviewAuthenticator({ upstream: s, ttlMs: TTL, outageGraceMs: GRACE, clock });
    const answer = s.answer;
    try {
      await a.authenticate('flip');
      await clock.step(TTL + 1);
      s.answer = () => [503, { kind: 'Status', code: 503, message: 'etcd down' }];
      assert.equal((await a.authenticate('flip')).grace, true);
      s.answer = () => [403, { kind: 'Status', code: 403, message: 'forbidden' }];
      await assert.rejects(a.authenticate('flip'));
      // The token is now answered unauthenticated: the earlier success is forgotten.
      s.answer = () => [201, { status: { authenticated: false } }];
      assert.equal((await a.authenticate('flip')).authenticated, false);
      await clock.step(TTL + 1);
      s.answer = () => [503, { kind: 'Status', code: 503, message: 'etcd down' }];
      await assert.rejects(a.authenticate('flip'));
    } finally {
      s.answer = answer;
    }
  });
});

describe('outage grace of SubjectAccessReview (allowed / denied / never asked)', () => {
  let s: FakeReviewServer;
  const alice = { username: 'alice', uid: '', groups: [], extra: {} };
  const attrs = (namespace: string) => ({
    namespace,
    verb: 'list',
    group: '',
    version: 'v1',
    resource: 'pods',
  });
  before(async () => {
    s = await startFakeReviewServer((c) => {
      const ra = c.body.spec?.resourceAttributes as { namespace?: string };
      return ra.namespace === 'denied' ? sarAnswer(false, 'no RBAC') : sarAnswer(true);
    });
  });
  after(() => s.close());

  it('reuses an allowed decision within its authorized TTL + grace; a denial and an unasked spec fail', async () => {
    const clock = new FakeClock();
    const up = switchable(s);
    let graced = 0;
    const z = new SubjectAccessReviewAuthorizer({
      upstream: up,
      authorizedTtlMs: TTL,
      unauthorizedTtlMs: 1000,
      outageGraceMs: GRACE,
      clock,
      onGrace: () => graced++,
    });
    assert.equal((await z.authorize(alice, attrs('allowed'))).allowed, true);
    assert.equal((await z.authorize(alice, attrs('denied'))).allowed, false);
    up.refuse = true;
    await clock.step(TTL + 1);
    assert.deepEqual(await z.authorize(alice, attrs('allowed')), {
      allowed: true,
      reason: '',
      cached: true,
      grace: true,
    });
    await assert.rejects(z.authorize(alice, attrs('denied')));
    await assert.rejects(z.authorize(alice, attrs('never-asked')));
    await clock.step(GRACE);
    await assert.rejects(z.authorize(alice, attrs('allowed')));
    assert.equal(graced, 1);
  });
});
