import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { AcceptHosts } from '../../../src/auth/accept-hosts.ts';
import { AccessControl, type AccessControlOptions } from '../../../src/auth/access-control.ts';
import type { ProxyIdentity } from '../../../src/auth/proxy-identity.ts';
import type { SubjectAccessReviewAuthorizer } from '../../../src/auth/subject-access-review.ts';
import type { TokenReviewAuthenticator } from '../../../src/auth/token-review.ts';

const DEFAULT_HOSTS = ['^localhost$', '^127\\.0\\.0\\.1$', '^\\[::1\\]$'];

/** A request with headers and, optionally, a TLS peer certificate. */
function req(
  headers: Record<string, string>,
  cert?: { subject: Record<string, string>; authorized: boolean },
) {
  const socket = cert
    ? { getPeerCertificate: () => ({ subject: cert.subject }), authorized: cert.authorized }
    : { getPeerCertificate: () => ({}), authorized: false };
  return { headers: { host: 'localhost:8001', ...headers }, socket } as unknown as IncomingMessage;
}

const tokens = {
  authenticate: async (t: string) =>
    t === 'good'
      ? {
          authenticated: true,
          user: { username: 'alice', uid: 'u', groups: ['system:authenticated'], extra: {} },
          cached: false,
        }
      : t === 'down'
        ? Promise.reject(new Error('TokenReview: 503'))
        : { authenticated: false, error: 'invalid', cached: false },
} as unknown as TokenReviewAuthenticator;

const authorizer = {
  calls: [] as unknown[],
  async authorize(user: { username: string }, a: { namespace?: string }) {
    this.calls.push([user.username, a]);
    if (a.namespace === 'boom') throw new Error('SAR failed');
    return a.namespace === 'allowed'
      ? { allowed: true, reason: '', cached: false }
      : { allowed: false, reason: 'RBAC: nope', cached: true };
  },
};

const delegated = (over: Partial<AccessControlOptions> = {}) =>
  new AccessControl({
    delegatedAuth: true,
    impersonateCertificateClients: false,
    tokens,
    authorizer: authorizer as unknown as SubjectAccessReviewAuthorizer,
    ...over,
  });

const read = (namespace: string) => ({
  verb: 'list' as const,
  info: { group: '', version: 'v1', resource: 'configmaps', namespace },
  query: new URLSearchParams(),
});

describe('AccessControl: authenticated mode (--delegated-auth)', () => {
  it('an authorized cached read is admitted to the cache', async () => {
    const a = await delegated().admit(req({ authorization: 'Bearer good' }), read('allowed'));
    assert.equal(a.kind, 'admit');
    assert.equal(a.kind === 'admit' && a.upstream, undefined);
    assert.equal(a.decision, 'allow');
  });

  it("a denied one is the apiserver's 403 with the authorizer's reason", async () => {
    const a = await delegated().admit(req({ authorization: 'Bearer good' }), read('kube-system'));
    assert.equal(a.kind, 'refuse');
    assert.equal(
      a.kind === 'refuse' && a.status.status.message,
      'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "kube-system": RBAC: nope',
    );
    assert.equal(a.decision, 'deny');
    assert.equal(a.cached, true);
  });

  it('an invalid token and a failed TokenReview are 401', async () => {
    for (const h of ['Bearer bad', 'Bearer down', 'Bearer bad junk', 'Bearer good\tjunk']) {
      const a = await delegated().admit(req({ authorization: h }), read('allowed'));
      assert.equal(a.kind === 'refuse' && a.status.code, 401, h);
    }
  });

  it("the token is taken as the apiserver's bearer authenticator takes it (issue 29)", async () => {
    // `Bearer tok junk`: the token is the second space-separated field.
    const a = await delegated().admit(req({ authorization: 'Bearer good junk' }), read('allowed'));
    assert.equal(a.kind === 'admit' && a.decision, 'allow');
    // No token to the apiserver (anonymous there): upstream with the header, never the cache.
    for (const h of ['Bearer', 'Bearer ', 'Bearer  good', 'Bearer\tgood', 'Basic x']) {
      const b = await delegated().admit(req({ authorization: h }), read('allowed'));
      assert.deepEqual(
        b,
        {
          kind: 'admit',
          identity: { kind: 'bearer', authorization: h },
          upstream: 'unauthenticated',
          decision: 'unauthenticated',
        },
        h,
      );
    }
  });

  it('no credential: upstream as unauthenticated, never the cache; no Host check', async () => {
    const a = await delegated().admit(req({ host: 'evil.example' }), read('allowed'));
    assert.deepEqual(a, {
      kind: 'admit',
      identity: { kind: 'none' },
      upstream: 'unauthenticated',
      decision: 'unauthenticated',
    });
  });

  it('a verified client certificate is the user (CN, O); an unverified one is 401', async () => {
    const a = await delegated().admit(
      req({}, { subject: { CN: 'system:node:n1', O: 'system:nodes' }, authorized: true }),
      read('allowed'),
    );
    assert.equal(a.kind, 'admit');
    assert.deepEqual(a.identity, {
      kind: 'x509',
      user: {
        username: 'system:node:n1',
        uid: '',
        groups: ['system:nodes', 'system:authenticated'],
        extra: {},
      },
    });
    const b = await delegated().admit(req({}, { subject: { CN: 'x' }, authorized: false }), read('allowed'));
    assert.equal(b.kind === 'refuse' && b.status.code, 401);
  });

  it('an unverified certificate fails softly: a valid token decides, anything else is 401 (issue 29)', async () => {
    const stranger = { subject: { CN: 'kcp-admin', O: 'system:masters' }, authorized: false };
    const a = await delegated().admit(req({ authorization: 'Bearer good' }, stranger), read('allowed'));
    assert.equal(a.kind === 'admit' && a.decision, 'allow');
    assert.equal(a.identity.kind === 'bearer' && a.identity.user?.username, 'alice');
    // The x509 error stands when no token authenticates: never anonymous, never upstream.
    for (const h of ['Bearer bad', 'Bearer  good', 'Bearer', 'Basic x', undefined]) {
      const b = await delegated().admit(
        req(h === undefined ? {} : { authorization: h }, stranger),
        undefined,
      );
      assert.equal(b.kind === 'refuse' && b.status.code, 401, h);
    }
  });

  it('a failed SubjectAccessReview sends the read upstream (the apiserver decides)', async () => {
    const a = await delegated().admit(req({ authorization: 'Bearer good' }), read('boom'));
    assert.equal(a.kind === 'admit' && a.upstream, 'authorization-error');
  });

  it('a request that is not a cached read is only authenticated', async () => {
    const a = await delegated().admit(req({ authorization: 'Bearer good' }), undefined);
    assert.equal(a.kind, 'admit');
    assert.equal(a.identity.kind === 'bearer' && a.identity.user?.username, 'alice');
  });
});

describe('AccessControl: simple mode', () => {
  const simple = (same: boolean) =>
    new AccessControl({
      delegatedAuth: false,
      impersonateCertificateClients: false,
      acceptHosts: new AcceptHosts(DEFAULT_HOSTS),
      proxyIdentity: {
        sameAsAuthorization: async () => same,
        sameAsUser: async () => same,
      } as unknown as ProxyIdentity,
    });

  it('Host outside --accept-hosts: 403 Status, whatever the request', async () => {
    for (const host of ['evil.example:8001', 'evil.example']) {
      const a = await simple(true).admit(req({ host }), undefined);
      assert.equal(a.kind === 'refuse' && a.status.code, 403);
      assert.match(
        a.kind === 'refuse' ? a.status.status.message : '',
        /^forbidden: Host "evil\.example(:8001)?" is not accepted by --accept-hosts/,
      );
    }
    assert.equal((await simple(true).admit(req({ host: '[::1]:8001' }), undefined)).kind, 'admit');
  });

  it('no credential, or the same identity: the cache; another identity: upstream', async () => {
    assert.deepEqual(await simple(false).admit(req({}), read('x')), {
      kind: 'admit',
      identity: { kind: 'none' },
    });
    const same = await simple(true).admit(req({ authorization: 'Bearer t' }), read('x'));
    assert.equal(same.kind === 'admit' && same.upstream, undefined);
    const other = await simple(false).admit(req({ authorization: 'Bearer t' }), read('x'));
    assert.equal(other.kind === 'admit' && other.upstream, 'other-identity');
    const cert = await simple(false).admit(req({}, { subject: { CN: 'bob' }, authorized: true }), read('x'));
    assert.equal(cert.kind === 'admit' && cert.upstream, 'other-identity');
  });
});
