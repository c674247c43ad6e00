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
import { mockServer } from '../../support/fake-cache.ts';

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
