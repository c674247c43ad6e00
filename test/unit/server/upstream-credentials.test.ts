import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Dispatcher } from 'undici';
import { StatusError } from '../../../src/apimachinery/status.ts';
import type { ClientIdentity } from '../../../src/auth/access-control.ts';
import {
  CLIENT_IMPERSONATION_MESSAGE,
  type CredentialInput,
  type ForwardPlan,
  IMPERSONATION_FLAG_MESSAGE,
  impersonationHeaders,
  impersonationMode,
  upstreamCredentials,
} from '../../../src/server/upstream-credentials.ts';
import type { UpstreamTarget } from '../../../src/server/upstream-target.ts';

const pool = (name: string) => ({ name }) as unknown as Dispatcher;
/** A proxy whose own identity is a client certificate: separate pools for client credentials. */
const upstream: UpstreamTarget = {
  server: new URL('https://apiserver.test:6443'),
  dispatcher: pool('proxy'),
  longRunningDispatcher: pool('proxy-long'),
  authorization: () => 'Bearer proxy-token',
  clientCredentialPools: { dispatcher: pool('client'), longRunningDispatcher: pool('client-long') },
};
const alice = { username: 'alice', uid: '', groups: ['devs', 'system:authenticated'], extra: {} };

const plan = async (identity: ClientIdentity, over: Partial<CredentialInput> = {}) => {
  const r = await upstreamCredentials(
    {
      identity,
      headers: { accept: 'application/json' },
      delegatedAuth: false,
      impersonateCertificateClients: false,
      longRunning: false,
      ...over,
    },
    upstream,
  );
  return r;
};
const name = (p: ForwardPlan | StatusError) => (p as ForwardPlan).dispatcher as unknown as { name: string };

describe('upstreamCredentials', () => {
  it("a bearer client: its own header, over the pool without the proxy's certificate, in every mode", async () => {
    for (const delegatedAuth of [false, true]) {
      const p = (await plan(
        { kind: 'bearer', authorization: 'Bearer client' },
        { delegatedAuth },
      )) as ForwardPlan;
      assert.equal(p.headers.authorization, 'Bearer client');
      assert.equal(name(p).name, 'client');
      assert.equal(p.carries, 'client');
    }
    const long = await plan({ kind: 'bearer', authorization: 'Bearer c' }, { longRunning: true });
    assert.equal(name(long).name, 'client-long');
  });

  it("a bearer client's own Impersonate-* headers travel with its own token", async () => {
    const p = (await plan(
      { kind: 'bearer', authorization: 'Bearer c' },
      {
        headers: { 'impersonate-user': 'bob' },
      },
    )) as ForwardPlan;
    assert.deepEqual(p.headers, { 'impersonate-user': 'bob', authorization: 'Bearer c' });
  });

  it('no credential, simple mode: the proxy (sidecar); with --delegated-auth: nothing at all', async () => {
    const simple = (await plan({ kind: 'none' }, { headers: { authorization: 'stale' } })) as ForwardPlan;
    assert.equal(simple.headers.authorization, 'Bearer proxy-token');
    assert.equal(name(simple).name, 'proxy');
    const anon = (await plan({ kind: 'none' }, { delegatedAuth: true })) as ForwardPlan;
    assert.equal(anon.headers.authorization, undefined);
    assert.equal(name(anon).name, 'client');
    assert.equal(anon.carries, 'none');
  });

  it("no credential with Impersonate-* in simple mode: 403, never the proxy's rights", async () => {
    const r = await plan({ kind: 'none' }, { headers: { 'impersonate-user': 'admin' } });
    assert.ok(r instanceof StatusError);
    assert.equal(r.code, 403);
    // What `kubectl --as` through an http:// server always gets: the message names the cause.
    assert.equal(
      r.status.message,
      "forbidden: Impersonate-* headers arrived without a credential, and kube-cache-proxy never lends its own credentials to impersonate: kubectl and client-go send no credential to an http:// server (only the Impersonate-* headers of --as), so every request through http:// acts as the proxy's identity; for your own identity, and --as, use the proxy's https:// listener with --delegated-auth",
    );
    assert.notEqual(r.status.message, `forbidden: ${CLIENT_IMPERSONATION_MESSAGE}`);
  });

  it('an x509 client: 403 naming the flag without --impersonate-certificate-clients', async () => {
    const r = await plan({ kind: 'x509', user: alice });
    assert.ok(r instanceof StatusError);
    assert.equal(r.code, 403);
    assert.match(r.status.message, /--impersonate-certificate-clients/);
    assert.equal(r.status.message, `forbidden: ${IMPERSONATION_FLAG_MESSAGE}`);
  });

  it('an x509 client with the flag: the proxy impersonates it (its own Authorization dropped)', async () => {
    const p = (await plan(
      { kind: 'x509', user: alice },
      {
        impersonateCertificateClients: true,
        headers: { authorization: 'Bearer sneaky', accept: 'application/json' },
      },
    )) as ForwardPlan;
    assert.deepEqual(p.headers, {
      accept: 'application/json',
      authorization: 'Bearer proxy-token',
      'impersonate-user': 'alice',
      'impersonate-group': ['devs'],
    });
    assert.equal(name(p).name, 'proxy');
    assert.equal(p.carries, 'impersonation');
  });

  it('a node client: legacy form when the proxy may legacy-impersonate its username, else Impersonate-User alone', async () => {
    const n1 = {
      username: 'system:node:n1',
      uid: '',
      groups: ['system:nodes', 'system:authenticated'],
      extra: {},
    };
    const asked: string[] = [];
    const rights = (legacy: boolean) => ({
      mayLegacyImpersonateUser: async (u: string) => {
        asked.push(u);
        return legacy;
      },
    });
    const legacy = (await plan(
      { kind: 'x509', user: n1 },
      { impersonateCertificateClients: true, impersonationRights: rights(true) },
    )) as ForwardPlan;
    assert.deepEqual(legacy.headers['impersonate-group'], ['system:nodes']);
    const constrained = (await plan(
      { kind: 'x509', user: n1 },
      { impersonateCertificateClients: true, impersonationRights: rights(false) },
    )) as ForwardPlan;
    assert.equal(constrained.headers['impersonate-group'], undefined);
    assert.equal(constrained.headers['impersonate-user'], 'system:node:n1');
    // Only node users are asked about: the other forms are the same in both modes.
    await plan(
      { kind: 'x509', user: alice },
      { impersonateCertificateClients: true, impersonationRights: rights(true) },
    );
    assert.deepEqual(asked, ['system:node:n1', 'system:node:n1']);
  });

  it('a failed rights check fails the request (never a guessed mode)', async () => {
    const n1 = { username: 'system:node:n1', uid: '', groups: ['system:nodes'], extra: {} };
    await assert.rejects(
      plan(
        { kind: 'x509', user: n1 },
        {
          impersonateCertificateClients: true,
          impersonationRights: { mayLegacyImpersonateUser: () => Promise.reject(new Error('down')) },
        },
      ),
      /down/,
    );
  });

  it('an x509 client with its own Impersonate-* headers: 403', async () => {
    const r = await plan(
      { kind: 'x509', user: alice },
      {
        impersonateCertificateClients: true,
        headers: { 'impersonate-group': 'system:masters' },
      },
    );
    assert.ok(r instanceof StatusError);
  });
});

describe('impersonationHeaders (constrained impersonation modes, KEP-5284)', () => {
  it('a node, legacy mode: Impersonate-Group system:nodes too (legacy impersonation adds no group)', () => {
    assert.deepEqual(
      impersonationHeaders(
        { username: 'system:node:n1', uid: '', groups: ['system:nodes', 'system:authenticated'], extra: {} },
        'legacy',
      ),
      { 'impersonate-user': 'system:node:n1', 'impersonate-group': ['system:nodes'] },
    );
  });
  it('a node or service account username without its fixed groups names system:authenticated', () => {
    for (const username of ['system:node:n1', 'system:serviceaccount:a:b'])
      for (const mode of ['constrained', 'legacy'] as const)
        assert.deepEqual(
          impersonationHeaders({ username, uid: '', groups: ['system:authenticated'], extra: {} }, mode),
          { 'impersonate-user': username, 'impersonate-group': ['system:authenticated'] },
        );
    // Only part of a service account's groups: sent as they are.
    assert.deepEqual(
      impersonationHeaders({
        username: 'system:serviceaccount:a:b',
        uid: '',
        groups: ['system:serviceaccounts', 'system:authenticated'],
        extra: {},
      }),
      { 'impersonate-user': 'system:serviceaccount:a:b', 'impersonate-group': ['system:serviceaccounts'] },
    );
  });
  it('impersonationMode: legacy only for a node user the proxy may legacy-impersonate', async () => {
    const yes = { mayLegacyImpersonateUser: async () => true };
    const node = { username: 'system:node:n1', uid: '', groups: ['system:nodes'], extra: {} };
    assert.equal(await impersonationMode(node, yes), 'legacy');
    assert.equal(
      await impersonationMode(node, { mayLegacyImpersonateUser: async () => false }),
      'constrained',
    );
    assert.equal(await impersonationMode(node, undefined), 'constrained');
    assert.equal(await impersonationMode(alice, yes), 'constrained');
  });
  it('a node: Impersonate-User alone (arbitrary-node fixes system:nodes)', () => {
    assert.deepEqual(
      impersonationHeaders({
        username: 'system:node:n1',
        uid: '',
        groups: ['system:nodes', 'system:authenticated'],
        extra: {},
      }),
      { 'impersonate-user': 'system:node:n1' },
    );
  });
  it('a service account username: Impersonate-User alone', () => {
    assert.deepEqual(
      impersonationHeaders({
        username: 'system:serviceaccount:a:b',
        uid: '',
        groups: ['system:serviceaccounts', 'system:serviceaccounts:a'],
        extra: {},
      }),
      { 'impersonate-user': 'system:serviceaccount:a:b' },
    );
  });
  it('any other user: user-info with its groups (not system:authenticated), uid and extra', () => {
    assert.deepEqual(
      impersonationHeaders({
        username: 'u',
        uid: 'x',
        groups: ['g', 'system:authenticated'],
        extra: { 'example.com/k': ['v'] },
      }),
      {
        'impersonate-user': 'u',
        'impersonate-group': ['g'],
        'impersonate-uid': 'x',
        'impersonate-extra-example.com%2Fk': ['v'],
      },
    );
  });
});
