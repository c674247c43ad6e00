import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OUTAGE_MEMORY_MS, ReviewOutage, ReviewOutageError } from '../../../src/auth/review-outage.ts';
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
const GRACE = 300_000;

describe('ReviewOutage', () => {
  it('remembers a failure without an answer for OUTAGE_MEMORY_MS or while a probe runs; any HTTP answer forgets it', async () => {
    const clock = new FakeClock();
    const o = new ReviewOutage({ clock });
    assert.equal(o.remembered(), undefined);
    o.settled(new UpstreamError(503, 'down')); // an answer, even a 5xx: the apiserver answers
    assert.equal(o.remembered(), undefined);
    o.settled(Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' }));
    assert.ok(o.remembered() instanceof ReviewOutageError);
    await clock.step(OUTAGE_MEMORY_MS - 1);
    assert.ok(o.remembered());
    await clock.step(1);
    assert.equal(o.remembered(), undefined);
    // A probe in flight keeps it remembered past the memory; at most one probe at a time.
    o.settled(new Error('other side closed'));
    let finish!: () => void;
    let probes = 0;
    const probe = () => {
      probes++;
      return new Promise<void>((r) => {
        finish = r;
      });
    };
    o.probe(probe);
    o.probe(probe);
    assert.equal(probes, 1);
    await clock.step(OUTAGE_MEMORY_MS * 3);
    assert.ok(o.remembered());
    o.settled(); // the probe's answer
    finish();
    await clock.step(0);
    assert.equal(o.probing, false);
    assert.equal(o.remembered(), undefined);
  });
});

describe('outage grace on a frozen apiserver: reviews remembered as failing (review-outage.ts)', () => {
  let s: FakeReviewServer;
  const alice = { username: 'user-good', uid: '', groups: [], extra: {} };
  const attrs = (namespace: string) => ({
    namespace,
    verb: 'list',
    group: '',
    version: 'v1',
    resource: 'pods',
  });
  before(async () => {
    s = await startFakeReviewServer((c) => {
      if (c.path.includes('tokenreviews'))
        return c.body.spec?.token === 'bad'
          ? [201, { status: { authenticated: false } }]
          : tokenReviewAnswer(`user-${String(c.body.spec?.token)}`);
      const ra = c.body.spec?.resourceAttributes as { namespace?: string };
      return ra.namespace === 'denied' ? sarAnswer(false, 'no RBAC') : sarAnswer(true);
    });
  });
  after(() => s.close());

  /** What `p` gives when it settles before another review request reaches the server, else 'review sent'. */
  const beforeAnyReview = <T>(p: Promise<T>) => {
    const n = s.held.length;
    return Promise.race([p, until(() => s.held.length > n).then(() => 'review sent' as const)]);
  };

  it('after one review times out, allowed answers are reused at once with one probe in flight; unseen and denied keys still wait for their review; the probe ends it', async () => {
    const clock = new FakeClock();
    const outage = new ReviewOutage({ clock });
    const graced: string[] = [];
    const common = {
      upstream: s,
      outageGraceMs: GRACE,
      outage,
      clock,
      onGrace: (e: Error) => graced.push(e.message),
    };
    const tokens = new TokenReviewAuthenticator({ ...common, ttlMs: TTL });
    const authz = new SubjectAccessReviewAuthorizer({
      ...common,
      authorizedTtlMs: TTL,
      unauthorizedTtlMs: TTL,
    });
    assert.equal((await tokens.authenticate('good')).authenticated, true);
    assert.equal((await tokens.authenticate('bad')).authenticated, false);
    assert.equal((await authz.authorize(alice, attrs('ns'))).allowed, true);
    assert.equal((await authz.authorize(alice, attrs('denied'))).allowed, false);
    s.hold = true; // SIGSTOP
    await clock.step(TTL + 1);

    // The first read after the TTL waits for its TokenReview; it times out (dropped here).
    const first = tokens.authenticate('good');
    (await s.nextHeld()).drop();
    assert.equal((await first).grace, true);
    // Its SubjectAccessReview is not sent: the allowed decision is reused at once (old code:
    // another review, another 10 s timeout), and one probe goes out in the background.
    const decision = await beforeAnyReview(authz.authorize(alice, attrs('ns')));
    assert.deepEqual(decision, { allowed: true, reason: '', cached: true, grace: true });
    const probe = await s.nextHeld();
    assert.match(probe.call.path, /subjectaccessreviews/);
    // The next reads too, with no second probe while that one is in flight.
    await clock.step(TTL);
    const again = await beforeAnyReview(tokens.authenticate('good'));
    assert.equal((again as { grace?: boolean }).grace, true);
    const reused = await beforeAnyReview(authz.authorize(alice, attrs('ns')));
    assert.equal((reused as { grace?: boolean }).grace, true);
    assert.equal(s.held.length, 2);
    assert.match(graced.at(-1)!, /review not sent: the apiserver gave no answer/);

    // A token never seen and a denied request have nothing to reuse: their reviews are sent
    // (and fail) as ever: never admitted, never extended.
    const unseen = tokens.authenticate('never-seen');
    (await s.nextHeld()).drop();
    await assert.rejects(unseen);
    const bad = tokens.authenticate('bad');
    (await s.nextHeld()).drop();
    await assert.rejects(bad);
    const denied = authz.authorize(alice, attrs('denied'));
    (await s.nextHeld()).drop();
    await assert.rejects(denied);

    // SIGCONT: the probe is answered; the outage is forgotten and reviews are sent again.
    s.hold = false;
    probe.release();
    await until(() => !outage.probing);
    assert.equal(outage.remembered(), undefined);
    await clock.step(TTL + 1);
    const fresh = await authz.authorize(alice, attrs('ns'));
    assert.deepEqual(fresh, { allowed: true, reason: '', cached: false });
  });

  it("a probe's denial ends that request's grace at once", async () => {
    const clock = new FakeClock();
    const outage = new ReviewOutage({ clock });
    const authz = new SubjectAccessReviewAuthorizer({
      upstream: s,
      authorizedTtlMs: TTL,
      unauthorizedTtlMs: TTL,
      outageGraceMs: GRACE,
      outage,
      clock,
    });
    assert.equal((await authz.authorize(alice, attrs('revoked'))).allowed, true);
    await clock.step(TTL + 1);
    s.hold = true;
    const first = authz.authorize(alice, attrs('revoked'));
    (await s.nextHeld()).drop();
    assert.equal((await first).grace, true);
    const reused = await beforeAnyReview(authz.authorize(alice, attrs('revoked')));
    assert.equal((reused as { grace?: boolean }).grace, true);
    const probe = await s.nextHeld();
    // The RoleBinding was deleted meanwhile: the probe's answer is a denial.
    const answer = s.answer;
    s.answer = () => sarAnswer(false, 'no RBAC');
    s.hold = false;
    probe.release();
    await until(() => !outage.probing);
    s.answer = answer;
    // The denial is cached (not reused from the grace) and the grace forgot the allowed decision.
    assert.deepEqual(await authz.authorize(alice, attrs('revoked')), {
      allowed: false,
      reason: 'no RBAC',
      cached: true,
    });
  });
});

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}
