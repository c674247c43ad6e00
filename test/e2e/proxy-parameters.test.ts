/**
 * Issue 29: query parameters the cache does not implement go upstream (`unknown-parameter`),
 * and two answers the cache now gives as the apiserver does. Side by side with a real
 * kube-apiserver started with `--feature-gates=ShardedListAndWatch=true` (KEP-5866, alpha since
 * 1.36: a LIST or WATCH with `shardSelector` gets the objects whose uid hash falls in the range,
 * a LIST echoes `metadata.shardInfo`), through a proxy caching configmaps:
 * - a sharded LIST and WATCH at RV=0 (which the cache would answer) pass upstream with reason
 *   `unknown-parameter` and answer what the apiserver answers directly (half the objects, the
 *   `shardInfo`); the cache answered every object, without `shardInfo`;
 * - item 5c: `watch=1&timeoutSeconds=-1` is 200 with an empty body from the cache, as the
 *   apiserver (the cache streamed its snapshot);
 * - item 5d: a NUL in a label selector reads as the end of input: 200 with the apiserver's items
 *   from the cache (the cache answered 400).
 * Its own apiserver: the shared one runs without the feature gate.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, startFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

const SHARD = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
const OBJECTS = 20;

interface ListBody {
  metadata: { shardInfo?: unknown };
  items: { metadata: { name: string; resourceVersion: string } }[];
}

describe('issue 29: parameters the cache does not implement, side by side with the apiserver', () => {
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
  const watchNames = (body: string) =>
    body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string } } })
      .filter((e) => e.type === 'ADDED')
      .map((e) => e.object.metadata.name)
      .sort();

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

  test('a sharded LIST passes upstream (unknown-parameter) and answers what the apiserver answers', async () => {
    const q = `resourceVersion=0&shardSelector=${encodeURIComponent(SHARD)}`;
    const before = await requests({ verb: 'LIST', reason: 'unknown-parameter' });
    const want = await direct(q);
    const got = await viaProxy(q);
    assert.equal(want.status, 200, want.body);
    assert.equal(got.status, 200, got.body);
    const w = JSON.parse(want.body) as ListBody;
    const g = JSON.parse(got.body) as ListBody;
    // The apiserver shards: part of the objects, and the selector echoed.
    assert.ok(w.items.length > 0 && w.items.length < OBJECTS, `${w.items.length} of ${OBJECTS}`);
    assert.deepEqual(w.metadata.shardInfo, { selector: SHARD });
    assert.deepEqual(g.metadata.shardInfo, w.metadata.shardInfo);
    assert.deepEqual(names(got.body), names(want.body));
    await counted({ verb: 'LIST', reason: 'unknown-parameter' }, before + 1);
    // A made-up parameter: upstream too, the apiserver's (unfiltered) answer.
    const made = await viaProxy('resourceVersion=0&fooBar=1');
    assert.equal(made.status, 200);
    assert.deepEqual(names(made.body), names((await direct('resourceVersion=0&fooBar=1')).body));
    await counted({ verb: 'LIST', reason: 'unknown-parameter' }, before + 2);
  });

  test('a sharded WATCH passes upstream (unknown-parameter) and streams what the apiserver streams', async () => {
    const q = `watch=1&resourceVersion=0&timeoutSeconds=1&shardSelector=${encodeURIComponent(SHARD)}`;
    const before = await requests({ verb: 'WATCH', reason: 'unknown-parameter' });
    const want = await direct(q);
    const got = await viaProxy(q);
    assert.equal(want.status, 200, want.body);
    assert.equal(got.status, 200, got.body);
    const w = watchNames(want.body);
    assert.ok(w.length > 0 && w.length < OBJECTS, `${w.length} of ${OBJECTS}`);
    assert.deepEqual(watchNames(got.body), w);
    await counted({ verb: 'WATCH', reason: 'unknown-parameter' }, before + 1);
  });

  test('item 5c: watch=1&timeoutSeconds=-1 is 200 with no event from the cache, as the apiserver', async () => {
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

  test('item 5d: a NUL in a label selector is the end of input: 200 from the cache, as the apiserver', async () => {
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
