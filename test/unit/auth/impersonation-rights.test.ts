import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  LegacyImpersonationRights,
  SELF_SUBJECT_ACCESS_REVIEW_PATH,
} from '../../../src/auth/impersonation-rights.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { type FakeReviewServer, startFakeReviewServer } from '../../support/fake-review-server.ts';

describe('LegacyImpersonationRights', () => {
  /** Names allowed ('' = every user); `fail`: answer 500. */
  let allow = new Set<string>();
  let fail = false;
  let fake: FakeReviewServer;
  const attrs = (i: number) =>
    (fake.calls[i]!.body.spec as { resourceAttributes: Record<string, string> }).resourceAttributes;
  before(async () => {
    fake = await startFakeReviewServer((call) => {
      if (fail) return [500, { kind: 'Status', code: 500 }];
      const name =
        (call.body.spec as { resourceAttributes: { name?: string } }).resourceAttributes.name ?? '';
      return [201, { status: { allowed: allow.has(name) } }];
    });
  });
  after(async () => {
    await fake.close();
  });
  const rights = (clock: FakeClock) => new LegacyImpersonationRights({ upstream: fake, ttlMs: 1000, clock });

  it('asks for every user first, then for the one username, as the proxy; cached for the TTL', async () => {
    fake.calls.length = 0;
    allow = new Set(['system:node:n1']);
    const clock = new FakeClock();
    const r = rights(clock);
    assert.equal(await r.mayLegacyImpersonateUser('system:node:n1'), true);
    assert.equal(await r.mayLegacyImpersonateUser('system:node:n2'), false);
    assert.deepEqual(
      fake.calls.map((c) => [c.path, c.authorization, c.body.kind]),
      Array(3).fill([SELF_SUBJECT_ACCESS_REVIEW_PATH, 'Bearer proxy-token', 'SelfSubjectAccessReview']),
    );
    assert.deepEqual(attrs(0), { verb: 'impersonate', group: '', resource: 'users' });
    assert.deepEqual(attrs(1), { verb: 'impersonate', group: '', resource: 'users', name: 'system:node:n1' });
    assert.deepEqual(attrs(2), { verb: 'impersonate', group: '', resource: 'users', name: 'system:node:n2' });
    assert.equal(await r.mayLegacyImpersonateUser('system:node:n1'), true);
    assert.equal(fake.calls.length, 3, 'cached');
    await clock.step(1001);
    allow = new Set(['']);
    assert.equal(await r.mayLegacyImpersonateUser('system:node:n2'), true);
    assert.equal(fake.calls.length, 4, 'expired: asked again; every user allowed: no per-name question');
  });

  it('a failed review throws and is not cached', async () => {
    fake.calls.length = 0;
    fail = true;
    const r = rights(new FakeClock());
    await assert.rejects(r.mayLegacyImpersonateUser('system:node:n1'));
    fail = false;
    allow = new Set();
    assert.equal(await r.mayLegacyImpersonateUser('system:node:n1'), false);
    assert.equal(fake.calls.length, 3);
  });
});
