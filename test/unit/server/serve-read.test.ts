/**
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeCache, mockServer, pod, podsInfo } from '../../support/fake-cache.ts';

describe('a scoped cache (issue 13)', () => {
  const scoped = { ...podsInfo, scope: { fieldSelector: 'metadata.namespace=a', labelSelector: 'app=x' } };

  it('serves LIST and WATCH only when the request selectors contain the scope; GET only what it holds', async () => {
    const cache = new FakeCache(scoped);
    const { agent, server } = mockServer([], { caches: [cache] });
    cache.objects = [pod('a', 'p1', 7)];
    agent
      .get('https://apiserver.test:6443')
      .intercept({ path: () => true, method: 'GET' })
      .reply(200, '{"upstream":true}')
      .persist();
    const from = async (url: string) => {
      const r = await server.app.inject({ method: 'GET', url });
      return { code: r.statusCode, upstream: r.body.includes('"upstream":true') };
    };
    try {
      // Inside: every scope requirement present (`==` is `=`), extra requirements allowed.
      assert.deepEqual(
        await from(
          '/api/v1/pods?resourceVersion=0&fieldSelector=metadata.namespace%3D%3Da&labelSelector=app%3Dx,tier%3Dweb',
        ),
        { code: 200, upstream: false },
      );
      assert.deepEqual(
        await from(
          '/api/v1/namespaces/a/pods?resourceVersion=0&fieldSelector=metadata.namespace%3Da&labelSelector=app%3Dx',
        ),
        { code: 200, upstream: false },
      );
      // Outside: a requirement missing or different, or no selector at all.
      assert.deepEqual(await from('/api/v1/pods?resourceVersion=0&labelSelector=app%3Dx'), {
        code: 200,
        upstream: true,
      });
      assert.deepEqual(
        await from(
          '/api/v1/pods?resourceVersion=0&fieldSelector=metadata.namespace%3Db&labelSelector=app%3Dx',
        ),
        { code: 200, upstream: true },
      );
      assert.deepEqual(await from('/api/v1/pods?watch=1&resourceVersion=0'), { code: 200, upstream: true });
      assert.equal(cache.watches.length, 0);
      // GET: the object held is served; any other name goes upstream (the cache cannot prove a 404).
      assert.deepEqual(await from('/api/v1/namespaces/a/pods/p1?resourceVersion=0'), {
        code: 200,
        upstream: false,
      });
      assert.deepEqual(await from('/api/v1/namespaces/a/pods/p9?resourceVersion=0'), {
        code: 200,
        upstream: true,
      });
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});
