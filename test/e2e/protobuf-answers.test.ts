/**
 * Issue 32: protobuf answers served from the cache, side by side with the fixture apiserver's
 * answer to the same request: LIST (whole body at the same RV), GET, PartialObjectMetadata(List)
 * and WATCH (watch-list: every ADDED frame byte for byte, the initial-events-end BOOKMARK framed
 * as the apiserver frames it; a later write's event byte for byte). A kind the encoder declines
 * (ControllerRevision: raw JSON) goes upstream with its reason; CBOR-first goes upstream;
 * protobuf answers are the default (`--protobuf-answers=json`, turning them off, is checked too). Then client-go's typed informer with protobuf
 * (`--content-type=protobuf`, and a protobuf-only Accept) and the metadata informer: the same
 * store as direct, and no LIST/WATCH passed upstream.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { encodeObjectMessage, objectAnswer, watchFrame } from '../../src/apimachinery/protobuf/envelope.ts';
import { decodeProtobufMeta } from '../../src/apimachinery/protobuf-meta.ts';
import { type Fixture, runProbe, sharedFixture, writeKubeconfig } from '../fixture/index.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const PB = 'application/vnd.kubernetes.protobuf';
const PB_FIRST = `${PB}, */*`;
const META = 'as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
const META_LIST = 'as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
/** What client-go's metadata client sends (metadata.go). */
const CLIENT_GO_LIST = `${PB};${META_LIST},application/json;${META_LIST},application/json`;
const CLIENT_GO_OBJ = `${PB};${META},application/json;${META},application/json`;

interface Answer {
  status: number;
  body: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

/** Splits a protobuf watch stream into its frames (4-byte big-endian length + WatchEvent). */
function frames(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at + 4 <= body.length) {
    const n = body.readUInt32BE(at);
    if (at + 4 + n > body.length) break;
    out.push(body.subarray(at, at + 4 + n));
    at += 4 + n;
  }
  return out;
}

/** A frame's event type and its object's metadata (decodeProtobufMeta). */
function frameInfo(frame: Buffer): { type: string; rv?: string; name?: string } {
  // WatchEvent{1: type, 2: RawExtension{1: object}}: small fields, single-byte lengths for the type.
  const typeLen = frame[5]!;
  const type = frame.subarray(6, 6 + typeLen).toString();
  const obj = frame.subarray(frame.indexOf(Buffer.from([0x6b, 0x38, 0x73, 0x00])));
  const m = decodeProtobufMeta(obj)?.metadata;
  return {
    type,
    ...(m?.resourceVersion ? { rv: m.resourceVersion } : {}),
    ...(m?.name ? { name: m.name } : {}),
  };
}

describe('issue 32: protobuf answers from the cache', () => {
  let f: Fixture;
  let agent: Agent;
  let auth: Record<string, string>;
  let proxy: InProcessProxy;
  let ns: string;

  const direct = async (path: string, accept: string, init: { method?: string; body?: unknown } = {}) => {
    const r = await request(`${f.server}${path}`, {
      dispatcher: agent,
      method: (init.method ?? 'GET') as 'GET',
      headers: { ...auth, accept, 'content-type': 'application/json' },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
    return {
      status: r.statusCode,
      body: Buffer.from(await r.body.arrayBuffer()),
      headers: r.headers,
    } as Answer;
  };
  const via = async (path: string, accept: string): Promise<Answer> => {
    const r = await request(`${proxy.url}${path}`, { headers: { ...auth, accept } });
    return { status: r.statusCode, body: Buffer.from(await r.body.arrayBuffer()), headers: r.headers };
  };
  const fromCache = (a: Answer) => a.headers['audit-id'] === undefined;
  const rvOf = (a: Answer) => decodeProtobufMeta(a.body)?.metadata?.resourceVersion ?? '';
  const reasons = async () => {
    const s = parsePrometheus(await (await fetch(`${proxy.ops}/metrics`)).text());
    return (reason: string) => sum(s, 'kube_cache_proxy_requests_total', { reason });
  };

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    auth = { authorization: `Bearer ${f.tokens.admin}`, 'user-agent': 'e2e' };
    ns = await f.newNamespace('pbserve');
    for (const name of ['a', 'b', 'c']) {
      const r = await direct(`/api/v1/namespaces/${ns}/configmaps`, 'application/json', {
        method: 'POST',
        body: {
          metadata: { name, labels: { tier: name === 'b' ? 'y' : 'x' }, annotations: { n: 'ü𝄞' } },
          data: { k: name },
        },
      });
      assert.equal(r.status, 201, r.body.toString());
    }
    const cr = await direct(`/apis/apps/v1/namespaces/${ns}/controllerrevisions`, 'application/json', {
      method: 'POST',
      body: { metadata: { name: 'cr' }, data: { x: 1 }, revision: 1 },
    });
    assert.equal(cr.status, 201, cr.body.toString());
    proxy = await startProxy(f, {
      resources: 'configmaps,namespaces,controllerrevisions.apps', // --protobuf-answers=cache, the default
    });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
  });

  test('LIST and GET: protobuf from the cache, byte for byte the apiserver', async () => {
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    // The first LIST encodes each object's message and keeps it; the next two write the kept ones.
    for (const accept of [PB, PB_FIRST, `${PB},application/json`]) {
      const a = await via(base, accept);
      assert.equal(a.status, 200, a.body.toString());
      assert.ok(fromCache(a), `${accept}: from the cache`);
      assert.equal(a.headers['content-type'], PB);
      const d = await direct(`${base}?resourceVersion=${rvOf(a)}&resourceVersionMatch=Exact`, accept);
      assert.equal(d.headers['content-type'], PB);
      assert.ok(a.body.equals(d.body), `${accept}: the LIST body at RV ${rvOf(a)}`);
    }
    // A page with its continue token, a selector, cluster-scoped.
    const rv = rvOf(await via(base, PB));
    const page = `${base}?limit=2&resourceVersion=${rv}&resourceVersionMatch=Exact`;
    const p1 = await via(page, PB);
    assert.ok(fromCache(p1));
    assert.ok(p1.body.equals((await direct(page, PB)).body), 'page 1 with its continue token');
    const s = await via(`${base}?labelSelector=tier%3Dx`, PB);
    const sd = await direct(
      `${base}?labelSelector=tier%3Dx&resourceVersion=${rvOf(s)}&resourceVersionMatch=Exact`,
      PB,
    );
    assert.ok(s.body.equals(sd.body), 'label selector');
    const n = await via('/api/v1/namespaces?labelSelector=kubernetes.io%2Fmetadata.name%3Ddefault', PB);
    assert.ok(fromCache(n));
    // At the proxy's RV exactly: on the shared fixture other tests write meanwhile, and a direct
    // RV="" LIST carries etcd's current revision in its ListMeta.
    assert.ok(
      n.body.equals(
        (
          await direct(
            `/api/v1/namespaces?labelSelector=kubernetes.io%2Fmetadata.name%3Ddefault&resourceVersion=${rvOf(n)}&resourceVersionMatch=Exact`,
            PB,
          )
        ).body,
      ),
      'cluster-scoped LIST at the same RV',
    );
    for (const path of [`${base}/a`, `/api/v1/namespaces/${ns}`]) {
      const g = await via(path, PB_FIRST);
      assert.ok(fromCache(g), path);
      assert.equal(g.headers['content-type'], PB);
      assert.ok(g.body.equals((await direct(path, PB_FIRST)).body), `GET ${path}`);
    }
    // JSON clients are still answered JSON.
    const j = await via(`${base}/a`, 'application/json');
    assert.equal(j.headers['content-type'], 'application/json');
  });

  test('PartialObjectMetadata(List) in protobuf: byte for byte', async () => {
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const a = await via(base, CLIENT_GO_LIST);
    assert.ok(fromCache(a));
    assert.equal(a.headers['content-type'], PB);
    const d = await direct(`${base}?resourceVersion=${rvOf(a)}&resourceVersionMatch=Exact`, CLIENT_GO_LIST);
    assert.ok(a.body.equals(d.body), 'PartialObjectMetadataList');
    const g = await via(`${base}/b`, CLIENT_GO_OBJ);
    assert.ok(fromCache(g));
    assert.ok(g.body.equals((await direct(`${base}/b`, CLIENT_GO_OBJ)).body), 'PartialObjectMetadata');
  });

  test('attack: a v1beta1 PartialObjectMetadataList in protobuf numbers items 1 and metadata 2', async () => {
    // `Accept: …protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1`: the cache wrote
    // v1's numbering ({1: ListMeta, 2: item…}) where the apiserver v1.37.2 writes {1: item…, 2:
    // ListMeta} (the same length, other bytes): a client read the ListMeta as an item.
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const accept = `${PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1`;
    for (const q of ['', '?limit=2', '?labelSelector=tier%3Dnone']) {
      const a = await via(`${base}${q}`, accept);
      assert.equal(a.status, 200, a.body.toString());
      assert.ok(fromCache(a), `${q}: from the cache`);
      assert.equal(a.headers['content-type'], PB);
      const m = decodeProtobufMeta(a.body, true);
      assert.equal(m?.items?.length, q === '' ? 3 : q === '?limit=2' ? 2 : 0, q);
      const rv = rvOf(a);
      assert.match(rv, /^[0-9]+$/, `${q}: the ListMeta's resourceVersion`);
      const sep = q === '' ? '?' : '&';
      const d = await direct(`${base}${q}${sep}resourceVersion=${rv}&resourceVersionMatch=Exact`, accept);
      assert.equal(d.status, 200, d.body.toString());
      assert.ok(a.body.equals(d.body), `${q}: v1beta1 PartialObjectMetadataList at RV ${rv}`);
    }
  });

  test('WATCH: watch-list frames and the initial-events-end BOOKMARK as the apiserver frames them', async () => {
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const path = `${base}?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=3`;
    const [a, d] = await Promise.all([via(path, PB_FIRST), direct(path, PB_FIRST)]);
    assert.ok(fromCache(a));
    assert.equal(a.headers['content-type'], `${PB};stream=watch`);
    assert.equal(a.headers['content-type'], d.headers['content-type']);
    const added = (b: Buffer) => frames(b).filter((x) => frameInfo(x).type === 'ADDED');
    assert.equal(added(a.body).length, 3);
    assert.deepEqual(added(a.body), added(d.body), 'the initial ADDED frames');
    const endOf = (b: Buffer) => frames(b).find((x) => frameInfo(x).type === 'BOOKMARK');
    for (const [who, body] of [
      ['proxy', a.body],
      ['apiserver', d.body],
    ] as const) {
      const end = endOf(body);
      assert.ok(end, `${who}: an initial-events-end bookmark`);
      const rv = frameInfo(end).rv!;
      const want = watchFrame(
        'BOOKMARK',
        objectAnswer(
          'v1',
          'ConfigMap',
          encodeObjectMessage(
            'v1',
            'ConfigMap',
            `{"metadata":{"resourceVersion":"${rv}","annotations":{"k8s.io/initial-events-end":"true"}}}`,
          ),
        ),
      );
      assert.ok(end.equals(want), `${who}: the bookmark frame`);
    }
    // A write after the LIST: its event, byte for byte, from an RV resume.
    const rv = frameInfo(endOf(a.body)!).rv!;
    const w = await direct(`${base}/c`, 'application/json', { method: 'DELETE' });
    assert.equal(w.status, 200, w.body.toString());
    const resume = `${base}?watch=1&resourceVersion=${rv}&timeoutSeconds=2`;
    const [ra, rd] = await Promise.all([via(resume, PB), direct(resume, PB)]);
    const events = (b: Buffer) => frames(b).filter((x) => frameInfo(x).type !== 'BOOKMARK');
    assert.ok(events(ra.body).length >= 1, 'the DELETED event');
    assert.deepEqual(events(ra.body), events(rd.body), 'resume: the same frames');
  });

  test('declines: raw JSON kinds go upstream (protobuf-inexact) or JSON from the cache, CBOR-first goes upstream', async () => {
    const path = `/apis/apps/v1/namespaces/${ns}/controllerrevisions`;
    // A protobuf-first client that takes JSON too gets the cache's JSON (its bytes the
    // apiserver's). First, and at RV=0: the upstream answers below carry a newer RV, after which
    // an RV="" read of this quiet resource goes upstream as behind-upstream.
    const j = await via(`${path}/cr?resourceVersion=0`, PB_FIRST);
    assert.ok(fromCache(j), 'protobuf-first: JSON from the cache');
    assert.equal(j.headers['content-type'], 'application/json');
    assert.ok(j.body.equals((await direct(`${path}/cr`, 'application/json')).body));
    const before = await reasons();
    const a = await via(`${path}/cr`, PB);
    assert.equal(a.status, 200);
    assert.ok(!fromCache(a), 'ControllerRevision (raw JSON data) from the apiserver');
    assert.ok(a.body.equals((await direct(`${path}/cr`, PB)).body));
    const l = await via(path, PB);
    assert.ok(!fromCache(l));
    const after = await reasons();
    assert.equal(after('protobuf-inexact') - before('protobuf-inexact'), 2);
    const c = await via(`/api/v1/namespaces/${ns}/configmaps/a`, 'application/cbor, application/json');
    assert.ok(!fromCache(c), 'CBOR first: the apiserver answers');
  });

  test('--protobuf-answers=json: protobuf-first clients get JSON, protobuf-only go upstream', async () => {
    const off = await startProxy(f, { resources: 'configmaps', args: ['--protobuf-answers=json'] });
    try {
      const path = `/api/v1/namespaces/${ns}/configmaps/a`;
      const first = await request(`${off.url}${path}`, { headers: { ...auth, accept: PB_FIRST } });
      assert.equal(first.headers['content-type'], 'application/json');
      assert.equal(first.headers['audit-id'], undefined);
      await first.body.dump();
      const only = await request(`${off.url}${path}`, { headers: { ...auth, accept: PB } });
      assert.equal(only.headers['content-type'], PB);
      assert.notEqual(only.headers['audit-id'], undefined, 'protobuf-only: from the apiserver');
      await only.body.dump();
    } finally {
      await off.stop();
    }
  });

  test('client-go informers with protobuf (typed, protobuf-only Accept, metadata): same store as direct, no LIST/WATCH upstream', async () => {
    const user = { token: f.tokens.admin };
    const viaKc = await writeKubeconfig(join(f.dir, `pb-via-${ns}.kubeconfig`), {
      server: proxy.url,
      caFile: f.caFile,
      user,
    });
    const dirKc = await writeKubeconfig(join(f.dir, `pb-direct-${ns}.kubeconfig`), {
      server: f.server,
      caFile: f.caFile,
      user,
    });
    const counts = async () => {
      const s = parsePrometheus(await (await fetch(`${proxy.ops}/metrics`)).text());
      const n = (served_from: string) =>
        ['LIST', 'WATCH'].reduce(
          (acc, verb) =>
            acc + sum(s, 'kube_cache_proxy_requests_total', { resource: 'configmaps', verb, served_from }),
          0,
        );
      return { cache: n('cache'), upstream: n('upstream') };
    };
    const variants: { name: string; o: Record<string, unknown> }[] = [
      { name: 'protobuf,json', o: { contentType: 'protobuf' } },
      { name: 'protobuf, */*', o: { contentType: 'protobuf', acceptContentTypes: '' } },
      { name: 'protobuf only', o: { contentType: 'protobuf', acceptContentTypes: PB } },
      { name: 'metadata', o: { metadata: true } },
    ];
    for (const v of variants) {
      for (const watchList of [true, false]) {
        const before = await counts();
        const common = { resource: 'configmaps', namespace: ns, watchList, quiet: true, ...v.o };
        const [a, d] = await Promise.all([
          runProbe(f.bin.probe, { ...common, kubeconfig: viaKc }),
          runProbe(f.bin.probe, { ...common, kubeconfig: dirKc }),
        ]);
        const where = `${v.name} watchList=${watchList}`;
        assert.ok(a.store.length >= 2, where);
        assert.deepEqual(
          a.store.map((s) => `${s.key}@${s.rv}`),
          d.store.map((s) => `${s.key}@${s.rv}`),
          where,
        );
        const after = await counts();
        assert.equal(after.upstream - before.upstream, 0, `${where}: no LIST/WATCH passed upstream`);
        assert.ok(after.cache - before.cache > 0, `${where}: served from the cache`);
      }
    }
  });
});
