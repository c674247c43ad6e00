/**
 * Issue 11: answers from the cache compared side by side with the fixture apiserver's own answer
 * to the same request: no unrequested initial-events-end BOOKMARK (item 1), field selectors the
 * apiserver rejects are not served (item 4), a CRD's own `listKind` (item 6), deprecation
 * `Warning` headers kept (item 7); and, on an apiserver of its own with the WatchList gate off,
 * `sendInitialEvents` watches answered as that apiserver does (item 8).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { acceptedFieldLabels } from '../../src/apimachinery/field-sets.ts';
import { type Fixture, sharedFixture, startFixture } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

describe('issue 11: the cache answers like the apiserver', () => {
  let f: Fixture;
  let agent: Agent;
  let auth: Record<string, string>;
  let proxy: InProcessProxy;
  let ns: string;

  const direct = async (path: string, method = 'GET', body?: unknown): Promise<Answer> => {
    const r = await request(`${f.server}${path}`, {
      dispatcher: agent,
      method: method as 'GET',
      headers: { ...auth, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: r.statusCode, body: await r.body.text(), headers: r.headers };
  };
  const via = async (p: InProcessProxy, path: string): Promise<Answer> => {
    const r = await request(`${p.url}${path}`, { headers: auth });
    return { status: r.statusCode, body: await r.body.text(), headers: r.headers };
  };
  /** Event types of a watch that ends by its own timeoutSeconds. */
  const types = (a: Answer) =>
    a.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const e = JSON.parse(l) as { type: string; object: { metadata?: { annotations?: object } } };
        return e.type === 'BOOKMARK' && e.object.metadata?.annotations
          ? 'BOOKMARK(initial-events-end)'
          : e.type;
      })
      // Periodic bookmarks depend on timing, on either side: left out.
      .filter((t) => t !== 'BOOKMARK');
  const fromCache = (a: Answer) => a.headers['audit-id'] === undefined;

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    auth = { authorization: `Bearer ${f.tokens.admin}`, 'user-agent': 'e2e' };
    ns = await f.newNamespace('fidelity');
    for (const name of ['a', 'b']) {
      const r = await direct(`/api/v1/namespaces/${ns}/configmaps`, 'POST', { metadata: { name } });
      assert.equal(r.status, 201, r.body);
    }
    proxy = await startProxy(f, { resources: 'configmaps,namespaces,nodes,secrets' });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
  });

  test('issue 11 item 1: no initial-events-end BOOKMARK on a watch that did not ask for bookmarks', async () => {
    const base = `/api/v1/namespaces/${ns}/configmaps?watch=1&timeoutSeconds=1`;
    const cases: [string, string[]][] = [
      ['&resourceVersion=0', ['ADDED', 'ADDED']],
      ['', ['ADDED', 'ADDED']],
      ['&resourceVersion=0&allowWatchBookmarks=true', ['ADDED', 'ADDED', 'BOOKMARK(initial-events-end)']],
      ['&sendInitialEvents=true&resourceVersionMatch=NotOlderThan', ['ADDED', 'ADDED']],
      [
        '&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
        ['ADDED', 'ADDED', 'BOOKMARK(initial-events-end)'],
      ],
    ];
    for (const [q, want] of cases) {
      const d = await direct(base + q);
      assert.equal(d.status, 200, d.body);
      assert.deepEqual(types(d), want, `apiserver ${q}`);
      const p = await via(proxy, base + q);
      assert.equal(p.status, 200, p.body);
      assert.ok(fromCache(p), `${q}: served from the cache`);
      assert.deepEqual(types(p), want, `proxy ${q}`);
    }
  });

  test("a GET by name from the cache is the apiserver's body byte for byte (ending in a newline)", async () => {
    // Regression: the cache wrote the object without the `\n` the apiserver's JSON encoder ends
    // every answer with (`curl` showed the GET one byte short; LISTs had it).
    for (const q of [
      `/api/v1/namespaces/${ns}/configmaps/a?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/configmaps/a`,
      '/api/v1/namespaces/default?resourceVersion=0',
    ]) {
      const d = await direct(q);
      assert.equal(d.status, 200, d.body);
      assert.ok(d.body.endsWith('}\n'), `apiserver ${q}`);
      const p = await via(proxy, q);
      assert.ok(fromCache(p), `${q}: served from the cache`);
      assert.equal(p.body, d.body, q);
      assert.equal(p.headers['content-length'], String(Buffer.byteLength(d.body)), q);
    }
  });

  test('issue 11 item 4: field labels the apiserver rejects are passed upstream (400), accepted ones served', async () => {
    const cases: [string, string, boolean][] = [
      ['/api/v1/namespaces', 'metadata.namespace=x', false],
      ['/api/v1/namespaces', 'name=default', false],
      ['/api/v1/namespaces', 'status.phase=Active', true],
      ['/api/v1/nodes', 'metadata.namespace=', false],
      ['/api/v1/nodes', 'spec.unschedulable=false', true],
      [`/api/v1/namespaces/${ns}/configmaps`, 'metadata.namespace=x', true],
      [`/api/v1/namespaces/${ns}/configmaps`, 'type=x', false],
      [`/api/v1/namespaces/${ns}/secrets`, 'type=Opaque', true],
    ];
    for (const [path, sel, ok] of cases) {
      const q = `${path}?fieldSelector=${encodeURIComponent(sel)}`;
      const d = await direct(q);
      const p = await via(proxy, q);
      assert.equal(d.status, ok ? 200 : 400, `apiserver ${q}: ${d.body}`);
      assert.equal(p.status, d.status, `proxy ${q}: ${p.body}`);
      if (!ok) assert.equal(p.body, d.body, `${q}: the apiserver's own 400`);
      else assert.ok(fromCache(p), `${q} served from the cache`);
    }
  });

  test('issue 11 items 6 and 7: a CRD with its own listKind and a deprecated version: same kind and Warning as the apiserver', async () => {
    const group = `fid${Date.now().toString(36)}.example.com`;
    const warning = `${group}/v1 Gizmo is deprecated; use ${group}/v2`;
    const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } };
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `gizmos.${group}` },
      spec: {
        group,
        names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo', listKind: 'GizmoCollection' },
        scope: 'Namespaced',
        versions: [
          { name: 'v1', served: true, storage: true, deprecated: true, deprecationWarning: warning, schema },
          { name: 'v2', served: true, storage: false, schema },
        ],
      },
    };
    const c = await f.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) });
    assert.equal(c.code, 0, c.stderr);
    const w = await f.kubectl([
      'wait',
      '--for=condition=Established',
      `crd/gizmos.${group}`,
      '--timeout=30s',
    ]);
    assert.equal(w.code, 0, w.stderr);
    const base = `/apis/${group}/v1/namespaces/${ns}/gizmos`;
    for (let i = 0; ; i++) {
      const r = await direct(base, 'POST', {
        apiVersion: `${group}/v1`,
        kind: 'Gizmo',
        metadata: { name: 'g1' },
      });
      if (r.status === 201) break;
      if (i > 40) assert.fail(`${r.status} ${r.body}`);
      await new Promise((res) => setTimeout(res, 250));
    }
    const p = await startProxy(f, { resources: `gizmos.v1.${group}` });
    try {
      const d = await direct(base);
      assert.equal(d.status, 200, d.body);
      assert.equal((JSON.parse(d.body) as { kind: string }).kind, 'GizmoCollection');
      assert.deepEqual(d.headers.warning, `299 - "${warning}"`);
      for (const path of [
        base,
        `${base}?resourceVersion=0`,
        `${base}/g1`,
        `${base}?watch=1&resourceVersion=0&timeoutSeconds=1`,
      ]) {
        const a = await via(p, path);
        assert.equal(a.status, 200, `${path}: ${a.body}`);
        assert.ok(fromCache(a), `${path} served from the cache`);
        assert.deepEqual(a.headers.warning, d.headers.warning, `${path}: the apiserver's Warning`);
      }
      const list = await via(p, base);
      assert.equal(
        (JSON.parse(list.body) as { kind: string }).kind,
        'GizmoCollection',
        'item 6: the CRD listKind',
      );
    } finally {
      await p.stop();
    }
  });

  test('issue 11 item 4: the accepted field labels of every built-in kind match the apiserver', async () => {
    const groups = [
      { path: '/api/v1', group: '', version: 'v1' },
      ...(
        JSON.parse((await direct('/apis')).body) as {
          groups: { name: string; preferredVersion: { groupVersion: string; version: string } }[];
        }
      ).groups.map((g) => ({
        path: `/apis/${g.preferredVersion.groupVersion}`,
        group: g.name,
        version: g.preferredVersion.version,
      })),
    ];
    // Every label any kind accepts, plus the two metadata ones, is tried on every kind.
    const candidates = new Set([
      'metadata.name',
      'metadata.namespace',
      'name',
      'status.replicas',
      'spec.nodeName',
    ]);
    const kinds: { path: string; group: string; version: string; resource: string; namespaced: boolean }[] =
      [];
    for (const g of groups) {
      const rl = JSON.parse((await direct(g.path)).body) as {
        resources: { name: string; namespaced: boolean; verbs: string[] }[];
      };
      for (const r of rl.resources) {
        if (r.name.includes('/') || !r.verbs.includes('list') || !r.verbs.includes('watch')) continue;
        kinds.push({ ...g, resource: r.name, namespaced: r.namespaced });
        for (const l of acceptedFieldLabels(g.group, g.version, r.name)) candidates.add(l);
      }
    }
    assert.ok(kinds.length > 40, `${kinds.length} built-in kinds`);
    const wrong: string[] = [];
    for (const k of kinds) {
      const accepted = new Set(acceptedFieldLabels(k.group, k.version, k.resource));
      for (const label of candidates) {
        const a = await direct(
          `${k.path}/${k.resource}?limit=1&fieldSelector=${encodeURIComponent(`${label}=x`)}`,
        );
        const ours = accepted.has(label);
        if ((a.status !== 400) !== ours)
          wrong.push(`${k.group}/${k.version}/${k.resource} ${label}: apiserver ${a.status}, ours ${ours}`);
      }
    }
    assert.deepEqual(wrong, []);
  });
});

describe('issue 11 item 8: an apiserver with the WatchList feature gate off', () => {
  let f: Fixture;
  let agent: Agent;
  let proxy: InProcessProxy;
  const auth = () => ({ authorization: `Bearer ${f.tokens.admin}`, 'user-agent': 'e2e' });
  before(async () => {
    f = await startFixture({ apiserverFlags: ['--feature-gates=WatchList=false'] });
    agent = new Agent({ connect: { ca: f.caPem } });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
    await f?.stop();
  });

  test("issue 11 item 8: sendInitialEvents gets the apiserver's 422 through the proxy; RV=0 watches are plain", async () => {
    const ns = await f.newNamespace('gateoff');
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const c = await request(`${f.server}${base}`, {
      dispatcher: agent,
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: 'a' } }),
    });
    assert.equal(c.statusCode, 201, await c.body.text());
    proxy = await startProxy(f, { resources: 'configmaps' });
    for (const q of [
      '?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1',
      '?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&timeoutSeconds=1',
      '?watch=1&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=1',
    ]) {
      const d = await request(`${f.server}${base}${q}`, { dispatcher: agent, headers: auth() });
      const dBody = await d.body.text();
      const p = await request(`${proxy.url}${base}${q}`, { headers: auth() });
      const pBody = await p.body.text();
      assert.equal(p.statusCode, d.statusCode, `${q}: proxy ${pBody} apiserver ${dBody}`);
      const strip = (b: string) =>
        b
          .split('\n')
          .filter((l) => (l !== '' && !/"type":"BOOKMARK"/.test(l)) || /initial-events-end/.test(l))
          .map(
            (l) =>
              JSON.parse(l) as { type?: string; message?: string; object?: { metadata?: { name?: string } } },
          )
          .map((o) => o.message ?? `${o.type} ${o.object?.metadata?.name ?? ''}`);
      assert.deepEqual(strip(pBody), strip(dBody), q);
    }
  });
});
