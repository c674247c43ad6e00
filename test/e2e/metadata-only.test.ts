/**
 * Issue 15: PartialObjectMetadata(List) answers (client-go `k8s.io/client-go/metadata`,
 * controller-runtime metadata watches) served from the cache, compared side by side with the
 * fixture apiserver's answer to the same JSON-only Accept: byte-identical for built-in kinds
 * (configmaps, namespaced; namespaces, cluster-scoped), JSON-equal for a custom resource.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, runProbe, sharedFixture, writeKubeconfig } from '../fixture/index.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

const OBJ = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
const LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
/** What client-go's metadata client sends for a LIST (metadata.go). */
const CLIENT_GO_LIST = `application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,${LIST},application/json`;
const CLIENT_GO_OBJ = `application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,${OBJ},application/json`;

describe('issue 15: metadata-only requests from the cache', () => {
  let f: Fixture;
  let agent: Agent;
  let auth: Record<string, string>;
  let proxy: InProcessProxy;
  let ns: string;
  let group: string;

  const direct = async (path: string, accept?: string, method = 'GET', body?: unknown): Promise<Answer> => {
    const r = await request(`${f.server}${path}`, {
      dispatcher: agent,
      method: method as 'GET',
      headers: { ...auth, 'content-type': 'application/json', ...(accept ? { accept } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: r.statusCode, body: await r.body.text(), headers: r.headers };
  };
  const via = async (path: string, accept: string): Promise<Answer> => {
    const r = await request(`${proxy.url}${path}`, { headers: { ...auth, accept } });
    return { status: r.statusCode, body: await r.body.text(), headers: r.headers };
  };
  const fromCache = (a: Answer) => a.headers['audit-id'] === undefined;
  /** The LIST body from `"items":` on (the list RV differs: the cache's is its resource's own). */
  const items = (body: string) => body.slice(body.indexOf('"items":'));
  const listMeta = (body: string) => {
    const m = (JSON.parse(body) as { metadata: Record<string, unknown> }).metadata;
    return { ...m, resourceVersion: 'N' };
  };

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    auth = { authorization: `Bearer ${f.tokens.admin}`, 'user-agent': 'e2e' };
    ns = await f.newNamespace('metaonly');
    for (const [name, tier] of [
      ['a', 'x'],
      ['b', 'y'],
      ['c', 'x'],
    ]) {
      const cm = { metadata: { name, labels: { tier }, annotations: { note: 'q"<&>' } }, data: { k: 'v' } };
      const r = await direct(`/api/v1/namespaces/${ns}/configmaps`, undefined, 'POST', cm);
      assert.equal(r.status, 201, r.body);
    }
    group = `meta${Date.now().toString(36)}.example.com`;
    const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } };
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${group}` },
      spec: {
        group,
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        scope: 'Namespaced',
        versions: [{ name: 'v1', served: true, storage: true, schema }],
      },
    };
    const c = await f.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) });
    assert.equal(c.code, 0, c.stderr);
    const w = await f.kubectl([
      'wait',
      '--for=condition=Established',
      `crd/widgets.${group}`,
      '--timeout=30s',
    ]);
    assert.equal(w.code, 0, w.stderr);
    for (const name of ['w1', 'w2']) {
      for (let i = 0; ; i++) {
        const r = await direct(`/apis/${group}/v1/namespaces/${ns}/widgets`, undefined, 'POST', {
          apiVersion: `${group}/v1`,
          kind: 'Widget',
          metadata: { name, labels: { app: 'w' } },
          aSpec: { z: 1, metadata: { fake: true } },
        });
        if (r.status === 201) break;
        if (i > 40) assert.fail(`${r.status} ${r.body}`);
        await new Promise((res) => setTimeout(res, 250));
      }
    }
    // The JSON answers: client-go's protobuf-first metadata Accept gets JSON with protobuf answers
    // off (the default answers it protobuf: test/e2e/protobuf-answers.test.ts).
    proxy = await startProxy(f, {
      resources: `configmaps,namespaces,widgets.v1.${group}`,
      args: ['--protobuf-answers=json'],
    });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
  });

  test('LIST (full, RV=0, RV="", paged, selectors, exact RV): byte-identical items, same Content-Type', async () => {
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const first = await via(base, LIST);
    const rv = (JSON.parse(first.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    for (const q of [
      '',
      '?resourceVersion=0',
      '?resourceVersion=',
      '?labelSelector=tier%3Dx',
      '?fieldSelector=metadata.name%3Db',
      `?resourceVersion=${rv}&resourceVersionMatch=Exact`,
      `?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`,
    ]) {
      for (const accept of [LIST, CLIENT_GO_LIST]) {
        const a = await via(`${base}${q}`, accept);
        const d = await direct(`${base}${q}`, LIST);
        assert.equal(a.status, 200, `${q}: ${a.body}`);
        assert.ok(fromCache(a), `${q} ${accept}: served from the cache`);
        assert.equal(a.headers['content-type'], d.headers['content-type'], q);
        assert.equal(items(a.body), items(d.body), `${q}: items byte for byte`);
        assert.deepEqual(listMeta(a.body), listMeta(d.body), q);
        if (q.includes('Exact')) assert.equal(a.body, d.body, 'exact RV: the whole body');
      }
    }
    // Paged at the cache's RV: the same pages and continue tokens as the apiserver.
    let path = `${base}?limit=2&resourceVersion=${rv}&resourceVersionMatch=Exact`;
    const a1 = await via(path, LIST);
    const d1 = await direct(path, LIST);
    assert.ok(fromCache(a1));
    assert.equal(a1.body, d1.body, 'page 1');
    const cont = (JSON.parse(a1.body) as { metadata: { continue: string } }).metadata.continue;
    path = `${base}?limit=2&continue=${encodeURIComponent(cont)}`;
    const a2 = await via(path, LIST);
    const d2 = await direct(path, LIST);
    assert.ok(fromCache(a2));
    assert.equal(a2.body, d2.body, 'page 2');
    // Cluster-scoped.
    const na = await via('/api/v1/namespaces?labelSelector=kubernetes.io%2Fmetadata.name%3Ddefault', LIST);
    const nd = await direct('/api/v1/namespaces?labelSelector=kubernetes.io%2Fmetadata.name%3Ddefault', LIST);
    assert.ok(fromCache(na));
    assert.equal(items(na.body), items(nd.body), 'namespaces: items byte for byte');
  });

  test('GET: byte-identical; the apiserver words the 406 of a kind that does not fit the verb', async () => {
    for (const path of [`/api/v1/namespaces/${ns}/configmaps/a`, `/api/v1/namespaces/${ns}`]) {
      for (const accept of [
        OBJ,
        CLIENT_GO_OBJ,
        'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1',
      ]) {
        const a = await via(path, accept);
        const d = await direct(path, accept.startsWith('application/vnd') ? OBJ : accept);
        assert.equal(a.status, 200, a.body);
        assert.ok(fromCache(a), `${path} ${accept}`);
        assert.equal(a.body, d.body, `${path} ${accept}`);
        assert.equal(a.headers['content-type'], 'application/json');
      }
    }
    const g = await via(`/api/v1/namespaces/${ns}/configmaps/a`, LIST);
    assert.equal(g.status, 406);
    assert.ok(!fromCache(g));
    const l = await via(`/api/v1/namespaces/${ns}/configmaps`, OBJ);
    assert.equal(l.status, 406);
  });

  test('WATCH: RV=N resume and watch-list with its bookmarks, byte-identical', async () => {
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const l = await via(base, LIST);
    const rv = (JSON.parse(l.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const u = await direct(`${base}/a`, undefined, 'PATCH', { metadata: { labels: { tier: 'y' } } });
    assert.ok(u.status === 200 || u.status === 415, u.body);
    if (u.status === 415) {
      const r = await request(`${f.server}${base}/a`, {
        dispatcher: agent,
        method: 'PATCH',
        headers: { ...auth, 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ metadata: { labels: { tier: 'y' } } }),
      });
      assert.equal(r.statusCode, 200, await r.body.text());
    }
    await new Promise((res) => setTimeout(res, 500));
    const resume = `${base}?watch=1&resourceVersion=${rv}&timeoutSeconds=2`;
    const [a, d] = await Promise.all([via(resume, CLIENT_GO_OBJ), direct(resume, OBJ)]);
    assert.ok(fromCache(a));
    assert.equal(a.headers['content-type'], d.headers['content-type']);
    const lines = (s: string) => s.split('\n').filter((x) => x !== '' && !x.startsWith('{"type":"BOOKMARK"'));
    assert.ok(lines(a.body).length >= 1, a.body);
    assert.deepEqual(lines(a.body), lines(d.body), 'resume: the MODIFIED event');
    // A selector watch: the label change moves `a` out of tier=x: DELETED with the previous metadata.
    const sel = `${base}?watch=1&resourceVersion=${rv}&timeoutSeconds=2&labelSelector=tier%3Dx`;
    const [as, ds] = await Promise.all([via(sel, OBJ), direct(sel, OBJ)]);
    assert.deepEqual(lines(as.body), lines(ds.body), 'selector: DELETED of the old metadata');
    const wl = `${base}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1`;
    const [aw, dw] = await Promise.all([via(wl, OBJ), direct(wl, OBJ)]);
    assert.ok(fromCache(aw));
    const norm = (s: string) =>
      s
        .split('\n')
        .filter((x) => x !== '')
        .map((x) =>
          x.startsWith('{"type":"BOOKMARK"')
            ? x.replace(/"resourceVersion":"\d+"/, '"resourceVersion":"N"')
            : x,
        )
        .filter(
          (x) =>
            !x.startsWith(
              '{"type":"BOOKMARK","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"N"}}}',
            ),
        );
    assert.deepEqual(
      norm(aw.body),
      norm(dw.body),
      'watch-list: ADDED lines and the initial-events-end bookmark',
    );
    assert.ok(norm(aw.body).at(-1)?.includes('k8s.io/initial-events-end'), aw.body);
  });

  test('a custom resource (keys sorted in storage): JSON-equal LIST, GET and watch-list', async () => {
    const base = `/apis/${group}/v1/namespaces/${ns}/widgets`;
    const a = await via(base, CLIENT_GO_LIST);
    const d = await direct(base, LIST);
    assert.ok(fromCache(a));
    const pa = JSON.parse(a.body) as { metadata: object; items: unknown[] };
    const pd = JSON.parse(d.body) as { metadata: object; items: unknown[] };
    assert.equal(pa.items.length, 2);
    assert.deepEqual(pa.items, pd.items);
    const g = await via(`${base}/w1`, OBJ);
    assert.ok(fromCache(g));
    assert.deepEqual(JSON.parse(g.body), JSON.parse((await direct(`${base}/w1`, OBJ)).body));
    const wl = `${base}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1`;
    const [aw, dw] = await Promise.all([via(wl, OBJ), direct(wl, OBJ)]);
    const events = (s: string) =>
      s
        .split('\n')
        .filter((x) => x !== '')
        .map((x) => JSON.parse(x) as { type: string; object: { metadata: Record<string, unknown> } })
        .filter((e) => e.type !== 'BOOKMARK' || e.object.metadata.annotations !== undefined)
        .map((e) =>
          e.type === 'BOOKMARK'
            ? { ...e, object: { ...e.object, metadata: { ...e.object.metadata, resourceVersion: 'N' } } }
            : e,
        );
    assert.deepEqual(events(aw.body), events(dw.body));
  });

  test('a real client: the metadata informer (client-go metadatainformer) ends with the same store, its LIST/WATCH from the cache', async () => {
    const user = { token: f.tokens.admin };
    const viaKc = await writeKubeconfig(join(f.dir, `meta-via-${ns}.kubeconfig`), {
      server: proxy.url,
      caFile: f.caFile,
      user,
    });
    const dirKc = await writeKubeconfig(join(f.dir, `meta-direct-${ns}.kubeconfig`), {
      server: f.server,
      caFile: f.caFile,
      user,
    });
    const counts = async () => {
      const s = parsePrometheus(await (await fetch(`${proxy.ops}/metrics`)).text());
      const n = (served_from: string) =>
        ['LIST', 'WATCH'].reduce(
          (a, verb) =>
            a + sum(s, 'kube_cache_proxy_requests_total', { resource: 'configmaps', verb, served_from }),
          0,
        );
      return { cache: n('cache'), upstream: n('upstream') };
    };
    for (const watchList of [true, false]) {
      const before = await counts();
      const common = { resource: 'configmaps', namespace: ns, metadata: true, watchList, quiet: true };
      const [via, dir] = await Promise.all([
        runProbe(f.bin.probe, { ...common, kubeconfig: viaKc }),
        runProbe(f.bin.probe, { ...common, kubeconfig: dirKc }),
      ]);
      assert.equal(via.store.length, 3, `watchList=${watchList}`);
      assert.deepEqual(
        via.store.map((s) => `${s.key}@${s.rv}`),
        dir.store.map((s) => `${s.key}@${s.rv}`),
      );
      const after = await counts();
      assert.equal(
        after.upstream - before.upstream,
        0,
        `watchList=${watchList}: no LIST/WATCH passed upstream`,
      );
      assert.ok(after.cache - before.cache > 0, `watchList=${watchList}: served from the cache`);
    }
  });
});
