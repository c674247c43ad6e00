/**
 * Issue 10 smoke test against the real kube-apiserver: the proxy in the authenticated mode
 * (TLS listener, `--client-ca-file` = the apiserver's client CA, `--delegated-auth`), its own
 * identity the fixture's cluster-admin token. A cached LIST is answered exactly as the apiserver
 * answers THAT client: the `none` token gets the apiserver's 403 body byte for byte, an invalid
 * token its 401, a request without credential goes upstream anonymously; the admin token and the
 * admin client certificate get the cache's answer.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const PATH = '/api/v1/namespaces/kube-system/configmaps';

describe('issue 10: sidecar mode: the Host allow-list against DNS rebinding', () => {
  let f: Fixture;
  let p: InProcessProxy;
  before(async () => {
    f = await sharedFixture();
    p = await startProxy(f, { resources: 'configmaps' });
  });
  after(() => p?.stop());

  test('Host: evil.example:8001 without credentials gets 403; Host: localhost:8001 and [::1]:8001 get the cache', async () => {
    const at = async (host: string) => {
      const r = await request(`${p.url}${PATH}`, { headers: { host, accept: 'application/json' } });
      return { code: r.statusCode, body: (await r.body.json()) as { kind: string; message?: string } };
    };
    const evil = await at('evil.example:8001');
    assert.equal(evil.code, 403);
    assert.equal(evil.body.kind, 'Status');
    assert.match(
      evil.body.message ?? '',
      /^forbidden: Host "evil\.example:8001" is not accepted by --accept-hosts/,
    );
    assert.equal((await at('localhost:8001')).body.kind, 'ConfigMapList');
    assert.equal((await at('[::1]:8001')).body.kind, 'ConfigMapList');
  });
});

describe('issue 10: authenticated mode (TLS, client CA, --delegated-auth)', () => {
  let f: Fixture;
  let p: InProcessProxy;
  let tls: Agent;
  let adminCert: Agent;

  before(async () => {
    f = await sharedFixture();
    const pki = dirname(f.caFile);
    p = await startProxy(f, {
      resources: 'configmaps',
      args: [
        '--tls-cert-file',
        join(pki, 'serving.crt'),
        '--tls-private-key-file',
        join(pki, 'serving.key'),
        '--client-ca-file',
        f.caFile,
        '--delegated-auth',
      ],
    });
    tls = new Agent({ connect: { ca: f.caPem } });
    adminCert = new Agent({
      connect: {
        ca: f.caPem,
        cert: await readFile(join(pki, 'admin.crt')),
        key: await readFile(join(pki, 'admin.key')),
      },
    });
  });
  after(async () => {
    await p?.stop();
    await tls?.close();
    await adminCert?.close();
  });

  /** GET `path` on `base` with `headers`; status, content type and body text. */
  const get = async (base: string, headers: Record<string, string>, dispatcher = tls) => {
    const r = await request(`${base}${PATH}`, {
      headers: { accept: 'application/json', ...headers },
      dispatcher,
    });
    return { code: r.statusCode, type: r.headers['content-type'], body: await r.body.text() };
  };

  /** `kube_cache_proxy_requests_total` of cache answers to LIST configmaps so far. */
  const cacheAnswers = async () => {
    const text = await (await request(`${p.ops}/metrics`)).body.text();
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('kube_cache_proxy_requests_total{') &&
          l.includes('verb="LIST"') &&
          l.includes('resource="configmaps"') &&
          l.includes('served_from="cache"') &&
          l.includes('code="200"'),
      );
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  test('the listener is TLS', () => {
    assert.match(p.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  });

  test("the `none` token: the apiserver's exact 403 on a cached LIST, not the cache", async () => {
    const direct = await get(f.server, { authorization: `Bearer ${f.tokens.none}` });
    const proxied = await get(p.url, { authorization: `Bearer ${f.tokens.none}` });
    assert.equal(direct.code, 403);
    assert.deepEqual(proxied, direct);
    assert.equal(
      JSON.parse(proxied.body).message,
      'configmaps is forbidden: User "system:serviceaccount:kcp-system:none" cannot list resource "configmaps" in API group "" in the namespace "kube-system"',
    );
  });

  test('the admin token and the admin client certificate: the cache answers', async () => {
    const before = await cacheAnswers();
    const direct = await get(f.server, { authorization: `Bearer ${f.tokens.admin}` });
    const byToken = await get(p.url, { authorization: `Bearer ${f.tokens.admin}` });
    const byCert = await get(p.url, {}, adminCert);
    assert.equal(byToken.code, 200);
    assert.equal(byCert.code, 200);
    const names = (b: string) =>
      (JSON.parse(b) as { items: { metadata: { name: string } }[] }).items.map((i) => i.metadata.name);
    assert.deepEqual(names(byToken.body), names(direct.body));
    assert.deepEqual(names(byCert.body), names(direct.body));
    assert.equal((await cacheAnswers()) - before, 2);
  });

  test('selectors travel in the SubjectAccessReview as the apiserver builds them (same 403 and 200 as direct)', async () => {
    const qs = '?fieldSelector=metadata.name%3Dkube-root-ca.crt&labelSelector=app%20in%20(x%2Cy)%2C!z%2Ck';
    const at = async (base: string, token: string) => {
      const r = await request(`${base}${PATH}${qs}`, {
        headers: { accept: 'application/json', authorization: `Bearer ${token}` },
        dispatcher: tls,
      });
      return { code: r.statusCode, body: await r.body.text() };
    };
    const direct = await at(f.server, f.tokens.none);
    assert.equal(direct.code, 403);
    // The metadata.name field selector names the object in the denial (requestinfo.go).
    assert.match(JSON.parse(direct.body).message, /^configmaps "kube-root-ca.crt" is forbidden/);
    assert.deepEqual(await at(p.url, f.tokens.none), direct);
    const admin = await at(p.url, f.tokens.admin);
    assert.equal(admin.code, 200, admin.body);
    // Both reviews were accepted by the apiserver (a malformed requirement would be a 400: "error").
    const metrics = await (await request(`${p.ops}/metrics`)).body.text();
    assert.match(metrics, /kube_cache_proxy_authorization_decisions_total\{decision="allowed"\} [1-9]/);
    assert.doesNotMatch(metrics, /kube_cache_proxy_authorization_decisions_total\{decision="error"\}/);
  });

  test("an invalid token: the apiserver's 401", async () => {
    const direct = await get(f.server, { authorization: 'Bearer not-a-token' });
    const proxied = await get(p.url, { authorization: 'Bearer not-a-token' });
    assert.equal(direct.code, 401);
    assert.deepEqual(proxied, direct);
  });

  test("no credential: passed upstream without the proxy's credentials (anonymous, as direct)", async () => {
    const direct = await get(f.server, {});
    const proxied = await get(p.url, {});
    assert.notEqual(direct.code, 200);
    assert.equal(proxied.code, direct.code);
    assert.deepEqual(JSON.parse(proxied.body), JSON.parse(direct.body));
  });

  test('an admin client certificate on an uncached request: 403 naming --impersonate-certificate-clients', async () => {
    const r = await request(`${p.url}/api/v1/namespaces/kube-system/secrets`, { dispatcher: adminCert });
    const st = (await r.body.json()) as { message: string; reason: string };
    assert.equal(r.statusCode, 403);
    assert.equal(st.reason, 'Forbidden');
    assert.match(st.message, /--impersonate-certificate-clients/);
  });
});
