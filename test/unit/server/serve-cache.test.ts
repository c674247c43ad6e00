/**
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { MAX_TIMER_MS, watchTimeoutMs } from '../../../src/server/serve-cache.ts';
import { FakeCache, mockServer, pod, podsInfo } from '../../support/fake-cache.ts';

describe('attack: huge watch timeoutSeconds', () => {
  it('timeoutSeconds=99999999999 keeps the watch open (was ended after 1 ms: timer overflow)', async () => {
    const opts = { timeoutSeconds: 99_999_999_999 } as Parameters<typeof watchTimeoutMs>[0];
    const ctx = { minRequestTimeoutMs: 1_800_000, random: () => 0 } as Parameters<typeof watchTimeoutMs>[1];
    assert.equal(watchTimeoutMs(opts, ctx), MAX_TIMER_MS);
    assert.equal(watchTimeoutMs({ ...opts, timeoutSeconds: 2_147_483 }, ctx), 2_147_483_000);

    // End to end through the server with the real clock: the watch must still be open later.
    const { agent, cache, server } = mockServer();
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (server.app.server.address() as AddressInfo).port;
      const ended = await new Promise<boolean>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: '/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=99999999999',
            agent: false,
          },
          (res) => {
            assert.equal(res.statusCode, 200);
            let done = false;
            res.on('end', () => {
              done = true;
            });
            res.resume();
            setTimeout(() => {
              resolve(done);
              req.destroy();
            }, 200);
          },
        );
        req.on('error', (err) => (err.message === 'socket hang up' ? undefined : reject(err)));
        req.end();
      });
      assert.equal(ended, false);
      assert.equal(cache.watches.length, 1);
      assert.equal(cache.watches[0]!.q.timeoutMs, MAX_TIMER_MS);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

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
