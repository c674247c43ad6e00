/**
 * Issue 29 (items 3 and 5): with `--delegated-auth` the proxy must reach the same decision as the
 * apiserver for the same request and identity, side by side against the fixture:
 * - authorization attributes as `requestinfo.go` derives them, for a ServiceAccount bound by a
 *   Role in one namespace (the `namespaces` special case: `GET /api/v1/namespaces/NS` is reviewed
 *   inside NS; a `metadata.name=` field selector names a list/watch only when the list options
 *   decode; `?watch` values; deletecollection; subresources);
 * - the `Authorization` header parsed as `bearertoken.go` does (split on single spaces, the second
 *   field is the token, an empty one means no token);
 * - a client certificate of an unknown CA next to a valid token: the x509 authenticator fails
 *   softly and the union authenticator moves on to the token.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { createPki } from '../fixture/certs.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

interface Shape {
  name: string;
  method?: 'GET' | 'DELETE';
  path: string;
}

interface Answer {
  status: number;
  body: string;
  fromCache: boolean;
}

describe('issue 29: the same decision as the apiserver (--delegated-auth)', () => {
  let f: Fixture;
  let p: InProcessProxy;
  let agent: Agent;
  /** An agent presenting a client certificate of a CA neither the apiserver nor the proxy trusts. */
  let strangerAgent: Agent;
  let strangerDir: string;
  let ns: string;
  let other: string;
  let token: string;
  let user: string;

  const send = async (
    base: string,
    s: Shape,
    authorization: string | undefined,
    dispatcher = agent,
  ): Promise<Answer> => {
    const r = await request(`${base}${s.path}`, {
      method: s.method ?? 'GET',
      dispatcher,
      headers: { accept: 'application/json', ...(authorization !== undefined ? { authorization } : {}) },
    });
    return {
      status: r.statusCode,
      body: await r.body.text(),
      fromCache: r.headers['audit-id'] === undefined,
    };
  };

  /** What must be equal: the status, and a Status body's message (a 403 names verb, resource and scope). */
  const comparable = (a: Answer) => {
    let message: string | undefined;
    try {
      const j = JSON.parse(a.body) as { kind?: string; message?: string };
      if (j.kind === 'Status') message = j.message;
    } catch {}
    return { status: a.status, message };
  };

  const both = async (s: Shape, authorization: string | undefined, dispatcher = agent) => {
    const [direct, proxy] = await Promise.all([
      send(f.server, s, authorization, dispatcher),
      send(p.url, s, authorization, dispatcher),
    ]);
    return { direct, proxy };
  };

  const show = (s: Shape, r: { direct: Answer; proxy: Answer }) =>
    `${s.name}: ${s.method ?? 'GET'} ${s.path}\n  direct ${r.direct.status}: ${r.direct.body.slice(0, 300)}\n  proxy  ${r.proxy.status}: ${r.proxy.body.slice(0, 300)}`;

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    strangerDir = await mkdtemp(join(tmpdir(), 'kcp-stranger-ca-'));
    const stranger = await createPki(strangerDir);
    strangerAgent = new Agent({
      connect: {
        ca: f.caPem,
        cert: await readFile(stranger.adminCert),
        key: await readFile(stranger.adminKey),
      },
    });
    ns = await f.newNamespace('authz-attr');
    other = await f.newNamespace('authz-other');
    const sa = `attr-${ns.split('-').pop()}`;
    user = `system:serviceaccount:kcp-system:${sa}`;
    const role = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'attr', namespace: ns },
      rules: [
        { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
        {
          apiGroups: [''],
          resources: ['configmaps'],
          verbs: ['get', 'list', 'watch'],
          resourceNames: ['cm-a'],
        },
        { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
      ],
    };
    const objects = {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        role,
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'attr', namespace: ns },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'attr' },
          subjects: [{ kind: 'ServiceAccount', name: sa, namespace: 'kcp-system' }],
        },
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: 'kcp-system' } },
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-a', namespace: ns } },
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-b', namespace: ns } },
      ],
    };
    const made = await f.kubectl(['apply', '-f', '-'], { input: JSON.stringify(objects) });
    assert.equal(made.code, 0, made.stderr);
    const t = await f.kubectl(['create', 'token', sa, '-n', 'kcp-system', '--duration=1h']);
    assert.equal(t.code, 0, t.stderr);
    token = t.stdout.trim();
    p = await startProxy(f, { resources: 'namespaces,configmaps,pods', delegatedAuth: true });
    // The Role reached the apiserver's RBAC authorizer before the proxy asks (a denial would be
    // cached by the proxy for the unauthorized TTL).
    await eventually('the Role in effect', 15_000, async () => {
      const r = await send(f.server, { name: 'ready', path: `/api/v1/namespaces/${ns}` }, `Bearer ${token}`);
      return r.status === 200 ? true : undefined;
    });
  });
  after(async () => {
    await p?.stop();
    await agent?.close();
    await strangerAgent?.close();
    if (strangerDir) await rm(strangerDir, { recursive: true, force: true });
  });

  test('every request shape: the same status (and Status message) as the apiserver for a Role-bound user', async () => {
    const cm = `/api/v1/namespaces/${ns}/configmaps`;
    const byName = (n: string) => `fieldSelector=${encodeURIComponent(`metadata.name=${n}`)}`;
    const shapes: Shape[] = [
      // The namespaces special case: the namespace attribute of a named namespace is its name.
      { name: 'GET namespace (own)', path: `/api/v1/namespaces/${ns}` },
      { name: 'GET namespace (other)', path: `/api/v1/namespaces/${other}` },
      { name: 'GET namespace status (subresource)', path: `/api/v1/namespaces/${ns}/status` },
      { name: 'LIST namespaces', path: '/api/v1/namespaces' },
      { name: 'LIST namespaces by name', path: `/api/v1/namespaces?${byName(ns)}` },
      { name: 'WATCH namespaces by name', path: `/api/v1/namespaces?watch=1&timeoutSeconds=1&${byName(ns)}` },
      { name: 'GET namespace ?watch', path: `/api/v1/namespaces/${ns}?watch=1&timeoutSeconds=1` },
      // resourceNames: get by name, list/watch named by a metadata.name field selector.
      { name: 'GET configmap granted', path: `${cm}/cm-a` },
      { name: 'GET configmap not granted', path: `${cm}/cm-b` },
      { name: 'LIST configmaps', path: cm },
      { name: 'LIST configmaps by granted name', path: `${cm}?${byName('cm-a')}` },
      { name: 'LIST configmaps by granted name ==', path: `${cm}?fieldSelector=metadata.name%3D%3Dcm-a` },
      { name: 'LIST configmaps by other name', path: `${cm}?${byName('cm-b')}` },
      { name: 'LIST configmaps by != name', path: `${cm}?fieldSelector=metadata.name!%3Dcm-b` },
      {
        name: 'LIST configmaps by two names (first wins)',
        path: `${cm}?fieldSelector=${encodeURIComponent('metadata.name=cm-a,metadata.name=cm-b')}`,
      },
      {
        name: 'WATCH configmaps by granted name',
        path: `${cm}?watch=true&timeoutSeconds=1&${byName('cm-a')}`,
      },
      { name: 'WATCH configmaps', path: `${cm}?watch=true&timeoutSeconds=1` },
      // List options that do not decode: the apiserver keeps no name from the field selector.
      { name: 'LIST configmaps by name, limit=abc', path: `${cm}?limit=abc&${byName('cm-a')}` },
      { name: 'LIST configmaps by name, limit=', path: `${cm}?limit=&${byName('cm-a')}` },
      {
        name: 'LIST configmaps by name, timeoutSeconds=x',
        path: `${cm}?timeoutSeconds=x&${byName('cm-a')}`,
      },
      {
        name: 'LIST configmaps by name, bad label selector',
        path: `${cm}?labelSelector=${encodeURIComponent('a in (')}&${byName('cm-a')}`,
      },
      { name: 'LIST configmaps by name, limit=2', path: `${cm}?limit=2&${byName('cm-a')}` },
      // ?watch values: list vs watch (the Role grants list on pods, not watch).
      { name: 'LIST pods', path: `/api/v1/namespaces/${ns}/pods` },
      { name: 'pods ?watch=1', path: `/api/v1/namespaces/${ns}/pods?watch=1&timeoutSeconds=1` },
      { name: 'pods ?watch=', path: `/api/v1/namespaces/${ns}/pods?watch=&timeoutSeconds=1` },
      { name: 'pods ?watch=0', path: `/api/v1/namespaces/${ns}/pods?watch=0` },
      { name: 'pods ?watch=FALSE', path: `/api/v1/namespaces/${ns}/pods?watch=FALSE` },
      { name: 'pods ?watch=no', path: `/api/v1/namespaces/${ns}/pods?watch=no&timeoutSeconds=1` },
      { name: 'pods ?watch=false&watch=1', path: `/api/v1/namespaces/${ns}/pods?watch=false&watch=1` },
      { name: 'LIST pods other namespace', path: `/api/v1/namespaces/${other}/pods` },
      { name: 'LIST pods cluster', path: '/api/v1/pods' },
      // Writes (passed through): delete and deletecollection (dry run).
      { name: 'DELETE configmap (dry run)', method: 'DELETE', path: `${cm}/cm-a?dryRun=All` },
      { name: 'DELETECOLLECTION configmaps (dry run)', method: 'DELETE', path: `${cm}?dryRun=All` },
      {
        name: 'DELETECOLLECTION configmaps by name (dry run)',
        method: 'DELETE',
        path: `${cm}?dryRun=All&${byName('cm-a')}`,
      },
    ];
    const bad: string[] = [];
    for (const s of shapes) {
      const r = await both(s, `Bearer ${token}`);
      if (JSON.stringify(comparable(r.direct)) !== JSON.stringify(comparable(r.proxy))) bad.push(show(s, r));
    }
    assert.deepEqual(bad, [], `user ${user}: the proxy decided otherwise than the apiserver`);
    // The proxy's own decision was exercised: the granted namespace GET came from its cache.
    const own = await send(p.url, { name: 'own', path: `/api/v1/namespaces/${ns}` }, `Bearer ${token}`);
    assert.equal(own.status, 200, own.body);
    assert.equal(own.fromCache, true);
  });

  test("the Authorization header is parsed as the apiserver's bearer authenticator", async () => {
    const s: Shape = { name: 'GET configmap granted', path: `/api/v1/namespaces/${ns}/configmaps/cm-a` };
    const headers = [
      `Bearer ${token}`,
      `bearer ${token}`,
      `BEARER ${token}`,
      `Bearer  ${token}`,
      `Bearer\t${token}`,
      `Bearer ${token} junk`,
      `Bearer ${token}  junk`,
      `Bearer ${token}\tjunk`,
      `Bearer ${token} `,
      'Bearer',
      'Bearer ',
      'Bearer  ',
      `Bearerx ${token}`,
      `Basic ${token}`,
      'Bearer invalid-token',
      'Bearer invalid-token junk',
      token,
    ];
    const bad: string[] = [];
    for (const h of headers) {
      const r = await both(s, h);
      if (JSON.stringify(comparable(r.direct)) !== JSON.stringify(comparable(r.proxy)))
        bad.push(show({ ...s, name: JSON.stringify(h.replace(token, '<token>')) }, r));
    }
    assert.deepEqual(bad, []);
  });

  test('a client certificate of an unknown CA: the token decides, as the union authenticator', async () => {
    const s: Shape = { name: 'GET configmap granted', path: `/api/v1/namespaces/${ns}/configmaps/cm-a` };
    const bad: string[] = [];
    for (const h of [
      `Bearer ${token}`,
      'Bearer invalid-token',
      `Bearer  ${token}`,
      `Basic ${token}`,
      undefined,
    ]) {
      const r = await both(s, h, strangerAgent);
      if (JSON.stringify(comparable(r.direct)) !== JSON.stringify(comparable(r.proxy)))
        bad.push(show({ ...s, name: String(h?.replace(token, '<token>')) }, r));
    }
    assert.deepEqual(bad, []);
    const ok = await send(p.url, s, `Bearer ${token}`, strangerAgent);
    assert.equal(ok.status, 200, ok.body);
    assert.equal(ok.fromCache, true);
  });
});
