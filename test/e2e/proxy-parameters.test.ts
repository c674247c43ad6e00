/**
 * Query parameters the cache does not implement go upstream (`unknown-parameter`), and answers
 * the cache gives as the apiserver does. Side by side with a real kube-apiserver started with
 * `--feature-gates=ShardedListAndWatch=true` (KEP-5866, alpha since 1.36: a LIST or WATCH with
 * `shardSelector` gets the objects whose uid or namespace hash falls in the ranges, a built-in
 * LIST echoes `metadata.shardInfo`), through a proxy caching configmaps:
 * - sharding: the first sharded request of a resource probes the upstream and goes upstream
 *   (`shard-support-unknown`); then LISTs at RV ""/0/exact, pages, WATCHes at RV 0/N and
 *   watch-lists are answered from the cache with the apiserver's items, events and `shardInfo`,
 *   an invalid selector with its Status; an expression outside the copied grammar goes upstream
 *   (`shard-selector-unparsed`). On the shared apiserver (gate off) the parameter is ignored, by
 *   the cache as by the apiserver;
 * - `watch=1&timeoutSeconds=-1` is 200 with an empty body from the cache, as the apiserver;
 * - a NUL in a label selector reads as the end of input: 200 with the apiserver's items from the
 *   cache.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture, startFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

const SHARD = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
const OBJECTS = 20;

interface ListBody {
  metadata: { shardInfo?: unknown };
  items: { metadata: { name: string; resourceVersion: string } }[];
}

describe('parameters: the cache and the apiserver side by side (ShardedListAndWatch on)', () => {
  let f: Fixture;
  let proxy: CliProxy;
  let agent: Agent;
  let ns: string;
  let base: string;

  const get = async (url: string, headers: Record<string, string> = {}) => {
    const r = await request(url, { dispatcher: agent, headers: { 'user-agent': 'e2e', ...headers } });
    return { status: r.statusCode, body: await r.body.text() };
  };
  const direct = (q: string) => get(`${f.server}${base}?${q}`, { authorization: `Bearer ${f.tokens.admin}` });
  const viaProxy = (q: string) => get(`${proxy.url}${base}?${q}`, proxy.auth);
  const requests = async (labels: Record<string, string>) =>
    sum(parsePrometheus((await get(`${proxy.ops}/metrics`)).body), 'kube_cache_proxy_requests_total', {
      resource: 'configmaps',
      ...labels,
    });
  /** Waits until the counter reaches `n` (a request is counted once its response closed). */
  const counted = (labels: Record<string, string>, n: number) =>
    eventually(`${JSON.stringify(labels)} counted ${n}`, 5_000, async () =>
      (await requests(labels)) >= n ? true : undefined,
    ).then(async () => assert.equal(await requests(labels), n, JSON.stringify(labels)));
  const names = (body: string) => (JSON.parse(body) as ListBody).items.map((i) => i.metadata.name).sort();

  before(async () => {
    f = await startFixture({ apiserverFlags: ['--feature-gates=ShardedListAndWatch=true'] });
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('params');
    base = `/api/v1/namespaces/${ns}/configmaps`;
    for (let i = 0; i < OBJECTS; i++) {
      const labels = i === 0 ? { app: 'x' } : {};
      const c = await request(`${f.server}${base}`, {
        dispatcher: agent,
        method: 'POST',
        headers: { authorization: `Bearer ${f.tokens.admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name: `c${i}`, labels } }),
      });
      assert.equal(c.statusCode, 201, await c.body.text());
    }
    proxy = await startProxy(f, { run: 'cli', resources: 'configmaps', args: ['--log-level', 'info'] });
    // The cache has every object (RV=0 from the cache).
    await eventually('the cache synced', 30_000, async () => {
      const r = await viaProxy('resourceVersion=0');
      return r.status === 200 && names(r.body).length === OBJECTS ? true : undefined;
    });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
    await f?.stop();
  });

  /** The same query direct and through the proxy; the proxy's answer counted with `labels`. */
  const both = async (q: string, labels: Record<string, string>) => {
    const before = await requests(labels);
    const want = await direct(q);
    const got = await viaProxy(q);
    await counted(labels, before + 1);
    return { want, got };
  };
  /** A list's items (names) and its metadata but `resourceVersion` and `continue`. */
  const listShape = (body: string) => {
    const b = JSON.parse(body) as ListBody & { metadata: Record<string, unknown> };
    const { resourceVersion: _rv, continue: c, ...meta } = b.metadata;
    return { names: names(body), meta, more: c !== undefined && c !== '' };
  };
  const CACHE_LIST = { verb: 'LIST', served_from: 'cache' };
  const CACHE_WATCH = { verb: 'WATCH', served_from: 'cache' };
  const selectors = [
    SHARD,
    "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
    "  shardRange( object.metadata.uid,'0x0000000000000000','0x4000000000000000') || (shardRange(object.metadata.uid, \"0xc000000000000000\", '0x10000000000000000'))",
    "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')",
    "shardRange(object.metadata.namespace, '0x0000000000000000', '0x0000000000000001')",
  ];

  test('sharding: the first request probes the upstream and goes upstream (shard-support-unknown), then the cache answers', async () => {
    const q = `resourceVersion=0&shardSelector=${encodeURIComponent(SHARD)}`;
    const first = await both(q, { verb: 'LIST', reason: 'shard-support-unknown' });
    assert.equal(first.got.status, 200, first.got.body);
    assert.deepEqual(listShape(first.got.body), listShape(first.want.body));
    const w = JSON.parse(first.want.body) as ListBody;
    // The apiserver shards: part of the objects, and the selector echoed.
    assert.ok(w.items.length > 0 && w.items.length < OBJECTS, `${w.items.length} of ${OBJECTS}`);
    assert.deepEqual(w.metadata.shardInfo, { selector: SHARD });
    await eventually('the probe answered: served from the cache', 10_000, async () => {
      const before = await requests(CACHE_LIST);
      const r = await viaProxy(q);
      assert.equal(r.status, 200, r.body);
      await new Promise((res) => setTimeout(res, 200));
      return (await requests(CACHE_LIST)) > before ? true : undefined;
    });
    // A made-up parameter: upstream, the apiserver's (unfiltered) answer.
    const made = await both('resourceVersion=0&fooBar=1', { verb: 'LIST', reason: 'unknown-parameter' });
    assert.deepEqual(names(made.got.body), names(made.want.body));
  });

  test('sharding: LIST at RV "", "0" and exact from the cache: the items and shardInfo of the apiserver', async () => {
    const rv = (JSON.parse((await direct('')).body) as { metadata: { resourceVersion: string } }).metadata
      .resourceVersion;
    for (const sel of selectors) {
      const s = `shardSelector=${encodeURIComponent(sel)}`;
      for (const q of [
        s,
        `resourceVersion=0&${s}`,
        `resourceVersion=${rv}&resourceVersionMatch=Exact&${s}`,
      ]) {
        const { want, got } = await both(q, CACHE_LIST);
        assert.equal(want.status, 200, want.body);
        assert.equal(got.status, 200, got.body);
        assert.deepEqual(listShape(got.body), listShape(want.body), q);
      }
    }
    // A PartialObjectMetadataList carries no shardInfo (the apiserver's conversion drops it).
    const accept = { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' };
    const q = `resourceVersion=0&shardSelector=${encodeURIComponent(SHARD)}`;
    const before = await requests(CACHE_LIST);
    const want = await get(`${f.server}${base}?${q}`, {
      authorization: `Bearer ${f.tokens.admin}`,
      ...accept,
    });
    const got = await get(`${proxy.url}${base}?${q}`, { ...proxy.auth, ...accept });
    await counted(CACHE_LIST, before + 1);
    assert.deepEqual(listShape(got.body), listShape(want.body));
    // A second value is ignored, as Go's ListOptions decoding takes the first.
    const two = await both(
      `resourceVersion=0&shardSelector=${encodeURIComponent(SHARD)}&shardSelector=x`,
      CACHE_LIST,
    );
    assert.deepEqual(listShape(two.got.body), listShape(two.want.body));
    // An empty value is no sharding.
    const empty = await both('resourceVersion=0&shardSelector=', CACHE_LIST);
    assert.deepEqual(listShape(empty.got.body), listShape(empty.want.body));
    assert.equal(names(empty.got.body).length, OBJECTS);
  });

  test('sharding: pages (limit and continue) from the cache as the apiserver pages', async () => {
    for (const sel of [SHARD, selectors[2]!]) {
      const s = `shardSelector=${encodeURIComponent(sel)}`;
      let [dc, pc] = ['', ''];
      const all: string[] = [];
      const allDirect: string[] = [];
      for (let page = 0; page < 20; page++) {
        const tail = (c: string) => (c ? `&continue=${encodeURIComponent(c)}` : '');
        const before = await requests(CACHE_LIST);
        const want = await direct(`limit=3&${s}${tail(dc)}`);
        const got = await viaProxy(`limit=3&${s}${tail(pc)}`);
        await counted(CACHE_LIST, before + 1);
        assert.equal(got.status, 200, got.body);
        const [w, g] = [listShape(want.body), listShape(got.body)];
        assert.deepEqual(g, w, `page ${page}`);
        all.push(...g.names);
        allDirect.push(...w.names);
        if (!w.more) break;
        dc = (JSON.parse(want.body) as { metadata: { continue: string } }).metadata.continue;
        pc = (JSON.parse(got.body) as { metadata: { continue: string } }).metadata.continue;
      }
      assert.deepEqual(all, allDirect);
      assert.deepEqual(all.sort(), names((await direct(`${s}`)).body));
    }
  });

  test('sharding: WATCH at RV 0 and N, and a watch-list, from the cache: the events of the apiserver', async () => {
    const s = `shardSelector=${encodeURIComponent(SHARD)}`;
    const rv = (JSON.parse((await direct('')).body) as { metadata: { resourceVersion: string } }).metadata
      .resourceVersion;
    // Changes after rv: new objects (some in the shard, some not) and an update.
    for (let i = 0; i < 8; i++) {
      const c = await request(`${f.server}${base}`, {
        dispatcher: agent,
        method: 'POST',
        headers: { authorization: `Bearer ${f.tokens.admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name: `w${i}` } }),
      });
      assert.equal(c.statusCode, 201, await c.body.text());
    }
    const now = (JSON.parse((await direct('')).body) as { metadata: { resourceVersion: string } }).metadata
      .resourceVersion;
    await eventually('the cache has the new objects', 10_000, async () =>
      names((await viaProxy('resourceVersion=0')).body).length === OBJECTS + 8 ? true : undefined,
    );
    const events = (body: string) =>
      body
        .split('\n')
        .filter((l) => l !== '')
        .map(
          (l) =>
            JSON.parse(l) as { type: string; object: { metadata: { name: string; annotations?: object } } },
        )
        .filter((e) => e.type !== 'BOOKMARK')
        .map((e) => `${e.type} ${e.object.metadata.name}`)
        .sort();
    for (const q of [
      `watch=1&resourceVersion=0&timeoutSeconds=1&${s}`,
      `watch=1&resourceVersion=${rv}&timeoutSeconds=1&${s}`,
      `watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion=${now}&timeoutSeconds=1&${s}`,
      `watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1&${s}`,
    ]) {
      const { want, got } = await both(q, CACHE_WATCH);
      assert.equal(want.status, 200, want.body);
      assert.equal(got.status, 200, got.body);
      const w = events(want.body);
      assert.ok(w.length > 0, q);
      assert.deepEqual(events(got.body), w, q);
    }
    // The initial-events-end bookmark of a watch-list: the same on both.
    const q = `watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1&${s}`;
    const ends = (body: string) =>
      body.split('\n').filter((l) => l.includes('"BOOKMARK"') && l.includes('initial-events-end')).length;
    const { want, got } = await both(q, CACHE_WATCH);
    assert.equal(ends(got.body), ends(want.body));
  });

  test("sharding: invalid selectors: the apiserver's Status from the cache; outside the copied grammar, upstream", async () => {
    const invalid = [
      'x',
      "shardRange(object.metadata.name, '0x00', '0x80')",
      "shardRange(object.metadata.uid, '0x00', '0x8000000000000000')",
      "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
      "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
      "invalidFunc(object.metadata.uid, '0x00', '0x80')",
      'shardRange(object.metadata.uid, 0, 8)',
      '   ',
      "shardRange(object.metadata.uid, '0x0g', '0x80')",
    ];
    for (const sel of invalid) {
      for (const pre of ['resourceVersion=0&', '', 'watch=1&resourceVersion=0&']) {
        const q = `${pre}shardSelector=${encodeURIComponent(sel)}`;
        const { want, got } = await both(q, pre.startsWith('watch') ? CACHE_WATCH : CACHE_LIST);
        assert.notEqual(want.status, 200, want.body);
        assert.equal(got.status, want.status, q);
        assert.equal(got.body, want.body, q);
      }
    }
    for (const sel of [
      "shardRange(object.metadata.uid, '0x0', '0x8') && shardRange(object.metadata.uid, '0x8', '0xf')",
      "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'",
    ]) {
      const q = `resourceVersion=0&shardSelector=${encodeURIComponent(sel)}`;
      const { want, got } = await both(q, { verb: 'LIST', reason: 'shard-selector-unparsed' });
      assert.equal(got.status, want.status);
      assert.equal(got.body, want.body);
    }
  });

  test('watch=1&timeoutSeconds=-1 is 200 with no event from the cache, as the apiserver', async () => {
    const q = 'watch=1&resourceVersion=0&timeoutSeconds=-1';
    const cached = await requests({ verb: 'WATCH', served_from: 'cache' });
    const got = await viaProxy(q);
    assert.equal(got.status, 200);
    assert.equal(got.body, '');
    await counted({ verb: 'WATCH', served_from: 'cache' }, cached + 1);
    // The apiserver: 200 and, but for a rare race of its watcher, nothing.
    await eventually('the apiserver ends it empty', 10_000, async () => {
      const want = await direct(q);
      assert.equal(want.status, 200);
      return want.body === '' ? true : undefined;
    });
  });

  test('a NUL in a label selector is the end of input: 200 from the cache, as the apiserver', async () => {
    for (const sel of ['app=x\0', 'app\0=x', '\0', 'app=x \0junk']) {
      const q = `resourceVersion=0&labelSelector=${encodeURIComponent(sel)}`;
      const cached = await requests({ verb: 'LIST', served_from: 'cache' });
      const want = await direct(q);
      const got = await viaProxy(q);
      assert.equal(want.status, 200, want.body);
      assert.equal(got.status, 200, got.body);
      assert.deepEqual(names(got.body), names(want.body), JSON.stringify(sel));
      await counted({ verb: 'LIST', served_from: 'cache' }, cached + 1);
    }
    // Both: 400 with the same message when something follows inside a token.
    const q = `resourceVersion=0&labelSelector=${encodeURIComponent('app=x\0junk')}`;
    const [want, got] = [await direct(q), await viaProxy(q)];
    assert.equal(got.status, 400);
    assert.equal(JSON.parse(got.body).message, JSON.parse(want.body).message);
  });
});

describe('shardSelector with the ShardedListAndWatch gate off: ignored by the cache as by its upstream', () => {
  let f: Fixture;
  let proxy: CliProxy;
  let agent: Agent;
  let base: string;
  const get = async (url: string, headers: Record<string, string> = {}) => {
    const r = await request(url, { dispatcher: agent, headers: { 'user-agent': 'e2e', ...headers } });
    return { status: r.statusCode, body: await r.body.text() };
  };
  const direct = (q: string) => get(`${f.server}${base}?${q}`, { authorization: `Bearer ${f.tokens.admin}` });
  const viaProxy = (q: string) => get(`${proxy.url}${base}?${q}`, proxy.auth);
  const requests = async (labels: Record<string, string>) =>
    sum(parsePrometheus((await get(`${proxy.ops}/metrics`)).body), 'kube_cache_proxy_requests_total', {
      resource: 'configmaps',
      ...labels,
    });
  const names = (body: string) => (JSON.parse(body) as ListBody).items.map((i) => i.metadata.name).sort();

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    const ns = await f.newNamespace('shard-off');
    base = `/api/v1/namespaces/${ns}/configmaps`;
    for (let i = 0; i < 6; i++) {
      const c = await request(`${f.server}${base}`, {
        dispatcher: agent,
        method: 'POST',
        headers: { authorization: `Bearer ${f.tokens.admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name: `c${i}` } }),
      });
      assert.equal(c.statusCode, 201, await c.body.text());
    }
    proxy = await startProxy(f, { run: 'cli', resources: 'configmaps', args: ['--log-level', 'info'] });
    await eventually('the cache synced', 30_000, async () => {
      const r = await viaProxy('resourceVersion=0');
      return r.status === 200 && names(r.body).length === 6 ? true : undefined;
    });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
  });

  test('a sharded LIST and WATCH, valid or not: every object, no shardInfo, from the cache once probed', async () => {
    const q = `resourceVersion=0&shardSelector=${encodeURIComponent(SHARD)}`;
    await eventually('the probe answered: served from the cache', 10_000, async () => {
      const before = await requests({ verb: 'LIST', served_from: 'cache' });
      await viaProxy(q);
      await new Promise((res) => setTimeout(res, 200));
      return (await requests({ verb: 'LIST', served_from: 'cache' })) > before ? true : undefined;
    });
    assert.ok((await requests({ verb: 'LIST', reason: 'shard-support-unknown' })) >= 1);
    for (const sel of [SHARD, 'x', "shardRange(object.metadata.uid, '0x0', '0x8') && true"]) {
      for (const pre of ['resourceVersion=0&', '']) {
        const r = `${pre}shardSelector=${encodeURIComponent(sel)}`;
        const before = await requests({ verb: 'LIST', served_from: 'cache' });
        const [want, got] = [await direct(r), await viaProxy(r)];
        assert.equal(want.status, 200, want.body);
        assert.equal(got.status, 200, got.body);
        assert.deepEqual(names(got.body), names(want.body));
        assert.equal(names(got.body).length, 6);
        assert.equal((JSON.parse(got.body) as ListBody).metadata.shardInfo, undefined);
        assert.equal((JSON.parse(want.body) as ListBody).metadata.shardInfo, undefined);
        await eventually('counted', 5_000, async () =>
          (await requests({ verb: 'LIST', served_from: 'cache' })) === before + 1 ? true : undefined,
        );
      }
    }
    const w = `watch=1&resourceVersion=0&timeoutSeconds=1&shardSelector=${encodeURIComponent(SHARD)}`;
    const watchBefore = await requests({ verb: 'WATCH', served_from: 'cache' });
    const got = await viaProxy(w);
    const adds = got.body.split('\n').filter((l) => l.includes('"ADDED"')).length;
    assert.equal(adds, 6);
    await eventually('counted', 5_000, async () =>
      (await requests({ verb: 'WATCH', served_from: 'cache' })) === watchBefore + 1 ? true : undefined,
    );
  });
});
