/**
 * Indented JSON answered from the cache, side by side with the fixture apiserver (a new user's
 * first `curl` LIST went upstream as `pretty`, and its answer's RV sent the next RV="" reads
 * upstream as `behind-upstream` for a minute). The apiserver indents a LIST's or GET's JSON
 * (object, list, PartialObjectMetadata, Table) for a curl/Wget/browser User-Agent, a true
 * `pretty` query or an Accept clause's `pretty=1` (`json.MarshalIndent(obj, "", "  ")`), never a
 * protobuf answer nor a watch stream: each case is compared byte for byte at the same RV.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { Agent, request } from 'undici';
import { goIndent } from '../../src/apimachinery/go-indent.ts';
import { decodeProtobufMeta } from '../../src/apimachinery/protobuf-meta.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const CURL = 'curl/8.5.0';
const JSON_ = 'application/json';
const PB = 'application/vnd.kubernetes.protobuf';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
const META_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const META = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

interface Answer {
  status: number;
  body: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

describe('indented JSON (curl, pretty) from the cache, byte for byte the apiserver', () => {
  let f: Fixture;
  let agent: Agent;
  let token: Record<string, string>;
  let proxy: InProcessProxy;
  let base: string;
  /** A custom resource's collection (unstructured JSON: the apiextensions apiserver's serializer). */
  let crBase: string;

  const get = async (url: string, headers: Record<string, string>): Promise<Answer> => {
    const r = await request(url, { dispatcher: agent, headers: { ...token, ...headers } });
    return { status: r.statusCode, body: Buffer.from(await r.body.arrayBuffer()), headers: r.headers };
  };
  const via = (path: string, headers: Record<string, string>) => get(`${proxy.url}${path}`, headers);
  const direct = (path: string, headers: Record<string, string>) => get(`${f.server}${path}`, headers);
  const fromCache = (a: Answer) => a.headers['audit-id'] === undefined;
  const jsonRV = (a: Answer) =>
    (JSON.parse(a.body.toString()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  const atRV = (path: string, rv: string) =>
    `${path}${path.includes('?') ? '&' : '?'}resourceVersion=${rv}&resourceVersionMatch=Exact`;
  const upstreamReasons = async () => {
    const s = parsePrometheus(await (await fetch(`${proxy.ops}/metrics`)).text());
    return sum(s, 'kube_cache_proxy_requests_total', { served_from: 'upstream' });
  };

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    token = { authorization: `Bearer ${f.tokens.admin}` };
    const ns = await f.newNamespace('pretty');
    base = `/api/v1/namespaces/${ns}/configmaps`;
    const group = `${ns}.example.com`;
    crBase = `/apis/${group}/v1/namespaces/${ns}/gizmos`;
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `gizmos.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo', listKind: 'GizmoList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    };
    let c = await f.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) });
    assert.equal(c.code, 0, c.stderr);
    c = await f.kubectl(['wait', '--for=condition=Established', `crd/gizmos.${group}`, '--timeout=60s']);
    assert.equal(c.code, 0, c.stderr);
    // Numbers of every shape (unstructured keeps int64 and float64), empty and nested values,
    // escapes: keys sorted as unstructured writes them.
    // `i` is 2^53 + 1, an int64 no JavaScript number holds: written into the JSON text.
    const spec = {
      i: 'INT64',
      f: 1.5,
      e: 1e21,
      neg: -0.000001,
      s: 'a"b\\c ü',
      o: {},
      a: [],
      n: [[{}]],
      z: null,
    };
    c = await f.kubectl(['create', '-n', ns, '-f', '-'], {
      input: JSON.stringify({
        apiVersion: `${group}/v1`,
        kind: 'Gizmo',
        metadata: { name: 'g1' },
        spec,
      }).replace('"INT64"', '9007199254740993'),
    });
    assert.equal(c.code, 0, c.stderr);
    const objects = [
      // Escaped quotes and backslashes, the punctuation the indenter must leave inside strings,
      // HTML escapes, non-ASCII, an empty value.
      {
        metadata: { name: 'tricky', labels: { k: 'x' }, annotations: { n: 'ü𝄞 <&> \u2028' } },
        data: { q: 'a"b\\c\\"d', p: '{[,:]}', e: '' },
      },
      // No data at all, and an empty map.
      { metadata: { name: 'empty', labels: { k: 'x' } } },
      { metadata: { name: 'empty-map', labels: { k: 'y' } }, data: {} },
      // Bigger than a batch buffer (256 KiB) once indented: the body is filled in several batches.
      { metadata: { name: 'big' }, data: { big: 'x'.repeat(300 * 1024) } },
    ];
    for (const body of objects) {
      const r = await request(`${f.server}${base}`, {
        dispatcher: agent,
        method: 'POST',
        headers: { ...token, 'content-type': JSON_ },
        body: JSON.stringify(body),
      });
      assert.equal(r.statusCode, 201, await r.body.text());
    }
    proxy = await startProxy(f, {
      resources: `configmaps,gizmos.v1.${group}`,
      args: ['--response-compression', 'gzip'],
    });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
  });

  test('a LIST and a GET with a curl, Wget or browser User-Agent: indented, from the cache', async () => {
    for (const ua of [CURL, 'Wget/1.21', 'Mozilla/5.0 (X11; Linux x86_64)']) {
      for (const path of [
        base,
        `${base}?labelSelector=k%3Dx`,
        `${base}?labelSelector=k%3Dnone`,
        `${base}?limit=2`,
      ]) {
        const a = await via(path, { 'user-agent': ua });
        assert.equal(a.status, 200, a.body.toString());
        assert.ok(fromCache(a), `${ua} ${path}: from the cache`);
        const d = await direct(atRV(path, jsonRV(a)), { 'user-agent': ua });
        assert.equal(a.body.toString(), d.body.toString(), `${ua} ${path}`);
        // It is MarshalIndent of the compact answer (no final newline).
        const compact = await direct(atRV(path, jsonRV(a)), { 'user-agent': 'e2e' });
        assert.ok(d.body.equals(goIndent(compact.body)), `${path}: json.Indent of the compact answer`);
        assert.ok(d.body.toString().startsWith('{\n  "kind": "ConfigMapList",'));
      }
      for (const name of ['tricky', 'empty', 'empty-map', 'big']) {
        const a = await via(`${base}/${name}`, { 'user-agent': ua });
        assert.ok(fromCache(a), `${ua} GET ${name}: from the cache`);
        const d = await direct(`${base}/${name}`, { 'user-agent': ua });
        assert.equal(a.body.toString(), d.body.toString(), `${ua} GET ${name}`);
        assert.equal(a.headers['content-type'], d.headers['content-type']);
      }
    }
    // The empty list is written `"items": []`, the empty map `"data": {}`.
    const none = await via(`${base}?labelSelector=k%3Dnone`, { 'user-agent': CURL });
    assert.match(none.body.toString(), /\n {2}"items": \[\]\n\}$/);
    // An empty object (managedFields' `".": {}`) is written `{}` (an empty `data` is omitted).
    assert.match(
      (await via(`${base}/empty-map`, { 'user-agent': CURL })).body.toString(),
      /\n {14}"\.": \{\},\n/,
    );
  });

  test('a custom resource (unstructured JSON): indented LIST and GET, from the cache', async () => {
    for (const path of [crBase, `${crBase}/g1`]) {
      const a = await via(path, { 'user-agent': CURL });
      assert.equal(a.status, 200, a.body.toString());
      assert.ok(fromCache(a), `${path}: from the cache`);
      const d = await direct(path === crBase ? atRV(path, jsonRV(a)) : path, { 'user-agent': CURL });
      assert.equal(a.body.toString(), d.body.toString(), path);
      assert.ok(a.body.toString().startsWith('{\n  "apiVersion": '), `${path}: indented`);
    }
    assert.match(
      (await via(`${crBase}/g1`, { 'user-agent': CURL })).body.toString(),
      /"i": 9007199254740993,/,
    );
  });

  test('the pretty query and the Accept clause`s pretty=1 decide as the apiserver', async () => {
    const cases: [string, Record<string, string>, boolean][] = [
      [`${base}?pretty=true`, { 'user-agent': 'e2e' }, true],
      [`${base}?pretty=1`, {}, true],
      [`${base}?pretty=T`, {}, true],
      [`${base}?pretty=false`, { 'user-agent': CURL }, false],
      [`${base}?pretty=0`, { 'user-agent': CURL }, false],
      // Not a Go bool: false, whatever the User-Agent.
      [`${base}?pretty=yes`, { 'user-agent': CURL }, false],
      // Empty: the User-Agent decides.
      [`${base}?pretty=`, { 'user-agent': CURL }, true],
      // Go reads the query only when its raw text contains `pretty`: an encoded name is not read.
      [`${base}?%70retty=false`, { 'user-agent': CURL }, true],
      [`${base}?%70retty=true`, {}, false],
      [base, { accept: `${JSON_};pretty=1` }, true],
      [base, { accept: `${JSON_};pretty=0`, 'user-agent': CURL }, true],
      [base, { accept: `${PB};q=0.5,${JSON_};pretty=1` }, true],
      // Go's url.ParseQuery skips a pair with a bad `%` escape or a `;` (the cache read them
      // verbatim): the next `pretty` value, or the User-Agent, decides.
      [`${base}?pretty=%zz&pretty=1`, {}, true],
      [`${base}?pretty=%zz`, { 'user-agent': CURL }, true],
      [`${base}?pretty=1;`, { 'user-agent': 'Mozilla/5.0' }, true],
      [`${base}?pretty=true;x=1`, {}, false],
      // goautoneg trims spaces only: `1<TAB>` is no `1` (the cache's trim() made it indented).
      [base, { accept: `${JSON_};pretty=1\t;q=1` }, false],
    ];
    for (const [path, headers, indented] of cases) {
      const a = await via(path, headers);
      assert.equal(a.status, 200, a.body.toString());
      assert.ok(fromCache(a), `${path} ${JSON.stringify(headers)}: from the cache`);
      const d = await direct(atRV(path, jsonRV(a)), headers);
      assert.equal(a.body.toString(), d.body.toString(), `${path} ${JSON.stringify(headers)}`);
      assert.equal(
        a.body.toString().startsWith('{\n'),
        indented,
        `${path} ${JSON.stringify(headers)}: indented`,
      );
    }
  });

  test('Table and PartialObjectMetadata(List) with curl: indented, from the cache', async () => {
    for (const [path, accept] of [
      [base, TABLE],
      [`${base}?includeObject=Object`, TABLE],
      [`${base}/tricky`, TABLE],
      [base, META_LIST],
      // No item: `"items": null` (the apiserver's nil slice; the cache wrote `[]`, compact too).
      [`${base}?labelSelector=k%3Dnone`, META_LIST],
      [`${base}/tricky`, META],
    ] as const) {
      const headers = { 'user-agent': CURL, accept };
      const single = path.endsWith('/tricky');
      // A Table's AGE cells follow the clock: a pair of answers a second apart differs there
      // only, so the pair is asked again (a difference in the bytes would repeat every time).
      let a = await via(path, headers);
      let d = await direct(single ? path : atRV(path, jsonRV(a)), headers);
      for (let tries = 0; tries < 5 && !a.body.equals(d.body); tries++) {
        a = await via(path, headers);
        d = await direct(single ? path : atRV(path, jsonRV(a)), headers);
      }
      assert.equal(a.status, 200, a.body.toString());
      assert.ok(fromCache(a), `${accept} ${path}: from the cache`);
      assert.equal(a.body.toString(), d.body.toString(), `${accept} ${path}`);
      assert.ok(a.body.toString().startsWith('{\n  "kind": '), `${accept} ${path}: indented`);
    }
  });

  test('protobuf and watch streams: pretty changes nothing, from the cache', async () => {
    for (const [path, headers] of [
      [base, { 'user-agent': CURL, accept: PB }],
      [`${base}?pretty=true`, { accept: PB }],
      [base, { accept: `${PB};pretty=1` }],
      [`${base}/tricky`, { 'user-agent': CURL, accept: PB }],
    ] as const) {
      const a = await via(path, headers);
      assert.equal(a.status, 200);
      assert.ok(fromCache(a), `${path} ${JSON.stringify(headers)}: from the cache`);
      assert.equal(a.headers['content-type'], PB);
      const rv = decodeProtobufMeta(a.body)?.metadata?.resourceVersion ?? '';
      const d = await direct(path.endsWith('/tricky') ? path : atRV(path, rv), headers);
      assert.ok(a.body.equals(d.body), `${path} ${JSON.stringify(headers)}`);
      const plain = await direct(path.endsWith('/tricky') ? path : atRV(path, rv), { accept: PB });
      assert.ok(d.body.equals(plain.body), 'the apiserver writes the same protobuf bytes');
    }
    // A watch's initial events: one compact JSON line each, indentation or not.
    const watch = `${base}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=2&pretty=true`;
    const [a, d] = await Promise.all([
      via(watch, { 'user-agent': CURL }),
      direct(watch, { 'user-agent': CURL }),
    ]);
    assert.ok(fromCache(a));
    const added = (b: Buffer) =>
      b
        .toString()
        .split('\n')
        .filter((l) => l.startsWith('{"type":"ADDED"'));
    assert.equal(added(a.body).length, 4);
    assert.deepEqual(added(a.body), added(d.body));
  });

  test('gzip: an indented answer above 128 KiB is compressed like any other', async () => {
    const a = await via(`${base}/big`, { 'user-agent': CURL, 'accept-encoding': 'gzip' });
    assert.ok(fromCache(a));
    assert.equal(a.headers['content-encoding'], 'gzip');
    const d = await direct(`${base}/big`, { 'user-agent': CURL });
    assert.ok(gunzipSync(a.body).equals(d.body));
  });

  test('nothing above went upstream, and a curl LIST leaves RV="" reads in the cache', async () => {
    assert.equal(await upstreamReasons(), 0);
    // The new user's try: curl, then curl again; both from the cache.
    for (let i = 0; i < 2; i++) assert.ok(fromCache(await via(base, { 'user-agent': CURL })));
  });
});
