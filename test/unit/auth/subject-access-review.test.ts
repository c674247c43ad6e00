import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  SUBJECT_ACCESS_REVIEW_PATH,
  SubjectAccessReviewAuthorizer,
  subjectAccessReviewSpec,
} from '../../../src/auth/subject-access-review.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { type FakeReviewServer, sarAnswer, startFakeReviewServer } from '../../support/fake-review-server.ts';

const alice = {
  username: 'alice',
  uid: 'u1',
  groups: ['g', 'system:authenticated'],
  extra: { 'example.com/k': ['v'] },
};
const list = { namespace: 'a', verb: 'list', group: '', version: 'v1', resource: 'pods' };

describe('SubjectAccessReviewAuthorizer', () => {
  let s: FakeReviewServer;
  before(async () => {
    s = await startFakeReviewServer((c) => {
      const ra = c.body.spec?.resourceAttributes as { namespace?: string };
      return ra.namespace === 'a' ? sarAnswer(true) : sarAnswer(false, 'no RBAC');
    });
  });
  after(() => s.close());

  it('sends user, uid, groups, extra and the resource attributes', async () => {
    const z = new SubjectAccessReviewAuthorizer({ upstream: s, authorizedTtlMs: 0, unauthorizedTtlMs: 0 });
    assert.deepEqual(await z.authorize(alice, list), { allowed: true, reason: '', cached: false });
    const call = s.calls.at(-1)!;
    assert.equal(call.path, SUBJECT_ACCESS_REVIEW_PATH);
    assert.deepEqual(call.body, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        resourceAttributes: list,
        user: 'alice',
        groups: ['g', 'system:authenticated'],
        extra: { 'example.com/k': ['v'] },
        uid: 'u1',
      },
    });
    assert.deepEqual(await z.authorize(alice, { ...list, namespace: 'b' }), {
      allowed: false,
      reason: 'no RBAC',
      cached: false,
    });
  });

  it('caches allowed for the authorized TTL and denied for the unauthorized TTL', async () => {
    const clock = new FakeClock();
    const z = new SubjectAccessReviewAuthorizer({
      upstream: s,
      authorizedTtlMs: 10_000,
      unauthorizedTtlMs: 2_000,
      clock,
    });
    await z.authorize(alice, list);
    await z.authorize(alice, { ...list, namespace: 'b' });
    await clock.step(2_001);
    assert.equal((await z.authorize(alice, list)).cached, true);
    assert.equal((await z.authorize(alice, { ...list, namespace: 'b' })).cached, false);
    await clock.step(8_000);
    assert.equal(
      (await z.authorize(alice, list)).cached,
      false,
      'a revoked binding is seen after the authorized TTL',
    );
  });

  it('denied wins when the answer says both; a failed review throws', async () => {
    const z = new SubjectAccessReviewAuthorizer({ upstream: s, authorizedTtlMs: 0, unauthorizedTtlMs: 0 });
    const before = s.answer;
    s.answer = () => [201, { status: { allowed: true, denied: true } }];
    assert.equal((await z.authorize(alice, list)).allowed, false);
    s.answer = () => [500, { kind: 'Status', code: 500 }];
    await assert.rejects(z.authorize(alice, list));
    s.answer = before;
  });

  it('omits empty uid, groups and extra like the Go JSON', () => {
    assert.deepEqual(subjectAccessReviewSpec({ username: 'u', uid: '', groups: [], extra: {} }, list), {
      resourceAttributes: list,
      user: 'u',
    });
  });
});
