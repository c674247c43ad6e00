/**
 * Regression: a proxy whose own identity is a TLS client certificate (the fixture's admin,
 * O=system:masters) must not lend that identity to clients that send their own token. The
 * apiserver authenticates a client certificate before any bearer token, so before the fix the
 * `none` user read kube-system secrets through the proxy (200) instead of getting 403.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

describe('pass-through credentials with a client-certificate proxy identity', () => {
  let f: Fixture;
  let p: InProcessProxy;

  before(async () => {
    f = await sharedFixture();
    p = await startProxy(f, { resources: 'configmaps', kubeconfig: f.kubeconfigs.admin });
  });
  after(async () => {
    await p?.stop();
  });

  test("a client's own token is what the apiserver sees (403 for the user with no rights)", async () => {
    const res = await request(`${p.url}/api/v1/namespaces/kube-system/secrets`, {
      headers: { authorization: `Bearer ${f.tokens.none}`, accept: 'application/json' },
    });
    const status = (await res.body.json()) as { reason: string; message: string };
    assert.equal(res.statusCode, 403);
    assert.equal(status.reason, 'Forbidden');
    assert.match(
      status.message,
      /^secrets is forbidden: User "system:serviceaccount:kcp-system:none" cannot list/,
    );
  });

  test('a long-running request with the client token is also the client (watch: 403)', async () => {
    const res = await request(`${p.url}/api/v1/namespaces/kube-system/secrets?watch=1&timeoutSeconds=1`, {
      headers: { authorization: `Bearer ${f.tokens.none}`, accept: 'application/json' },
    });
    await res.body.dump();
    assert.equal(res.statusCode, 403);
  });

  test('a request without credentials uses the proxy identity (the sidecar model)', async () => {
    const res = await request(`${p.url}/api/v1/namespaces/kube-system/secrets`, {
      headers: { accept: 'application/json' },
    });
    const list = (await res.body.json()) as { kind: string };
    assert.equal(res.statusCode, 200);
    assert.equal(list.kind, 'SecretList');
  });

  test('the limited token writes only where its RBAC allows', async () => {
    const ns = await f.newNamespace('creds');
    const create = (namespace: string) =>
      request(`${p.url}/api/v1/namespaces/${namespace}/configmaps`, {
        method: 'POST',
        headers: { authorization: `Bearer ${f.tokens.limited}`, 'content-type': 'application/json' },
        body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'creds-probe' } }),
      });
    const denied = await create(ns);
    await denied.body.dump();
    assert.equal(denied.statusCode, 403);
    const allowed = await create(f.limitedNamespace);
    const body = (await allowed.body.json()) as { metadata: { name: string } };
    assert.ok(allowed.statusCode === 201 || allowed.statusCode === 409, String(allowed.statusCode));
    if (allowed.statusCode === 201) assert.equal(body.metadata.name, 'creds-probe');
  });
});
