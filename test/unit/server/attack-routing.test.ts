/**
 * Inputs found by attacking the proxy against a real apiserver (v1.37.2) where the cache
 * answered differently from the apiserver; each must now reach the apiserver (or be accepted
 * like it does).
 */
import assert from 'node:assert/strict';
import { createServer, request, type ServerResponse } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { describe, it } from 'node:test';
import { Agent } from 'undici';
import { acceptsPlainJson } from '../../../src/apimachinery/accept.ts';
import { encodeContinue } from '../../../src/apimachinery/continue-token.ts';
import { parseGoQuery } from '../../../src/apimachinery/go-query.ts';
import { buildServer } from '../../../src/server/app.ts';
import { CacheRegistry } from '../../../src/server/cache-registry.ts';
import { delegate } from '../../../src/server/delegate.ts';
import { originForm } from '../../../src/server/handle-request.ts';
import { forwardRequestHeaders } from '../../../src/server/hop-by-hop.ts';
import { MAX_TIMER_MS, watchTimeoutMs } from '../../../src/server/serve-cache.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { FakeCache, fakeCodec, mockServer, pod } from '../../support/fake-cache.ts';

describe('attack: names the apiserver rejects are not served from the cache', () => {
  const registry = new CacheRegistry([new FakeCache()]);
  const kind = (path: string) => delegate(registry, 'GET', path, new URLSearchParams(), {}).kind;

  it('`.`, `..`, `%` and an encoded `/` in a name or namespace go upstream', () => {
    // apiserver: 400 `Name parameter invalid: "..": may not be '..'` (the cache said 404 NotFound)
    assert.equal(kind('/api/v1/namespaces/a/pods/..'), 'upstream');
    assert.equal(kind('/api/v1/namespaces/a/pods/%2e%2e'), 'upstream');
    assert.equal(kind('/api/v1/namespaces/a/pods/.'), 'upstream');
    // apiserver: 400 `may not contain '%'`
    assert.equal(kind('/api/v1/namespaces/a/pods/a%25b'), 'upstream');
    // apiserver: 404 "the server could not find the requested resource" (the cache: `pods "a/b" not found`)
    assert.equal(kind('/api/v1/namespaces/a/pods/a%2Fb'), 'upstream');
    // apiserver: 500 `invalid key` / 404 (the cache answered an empty list)
    assert.equal(kind('/api/v1/namespaces/%2e%2e/pods'), 'upstream');
    assert.equal(kind('/api/v1/namespaces/a%2Fb/pods'), 'upstream');
    // Ordinary names (unicode included) stay cached.
    assert.equal(kind('/api/v1/namespaces/a/pods/caf%C3%A9'), 'cache');
    assert.equal(kind('/api/v1/namespaces/a/pods/a..b'), 'cache');
    assert.equal(kind('/api/v1/namespaces/a/pods'), 'cache');
  });
});

describe('attack: Accept media types are case-sensitive like the apiserver', () => {
  it('`APPLICATION/JSON`, `Application/json`, `*/JSON` are not plain JSON (apiserver: 406)', () => {
    assert.equal(acceptsPlainJson('APPLICATION/JSON'), false);
    assert.equal(acceptsPlainJson('Application/json'), false);
    assert.equal(acceptsPlainJson('application/JSON'), false);
    assert.equal(acceptsPlainJson('APPLICATION/*'), false);
    assert.equal(acceptsPlainJson('application/json'), true);
    // Parameter names stay case-insensitive (`Q=0` is q=0 there too).
    assert.equal(acceptsPlainJson('application/json;AS=Table;g=meta.k8s.io;v=v1'), false);
  });
});

describe('attack: long request lines', () => {
  it('a 64 KiB label selector is served (the apiserver accepts up to 1 MiB; was 431 from Node)', async () => {
    const { agent, server } = mockServer([pod('a', 'p1', 7, { app: 'x' })]);
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (server.app.server.address() as AddressInfo).port;
      // The fake codec only parses `k=v` selectors; the size of the request line is what matters
      // (a real `app in (v0,…,v11999)` selector, 73 KB, was answered 431 by the proxy).
      const path = `/api/v1/namespaces/a/pods?resourceVersion=0&labelSelector=app%3Dx&padding=${'v'.repeat(70_000)}`;
      assert.ok(path.length > 64 * 1024);
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(status, 200);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

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

describe('attack: query strings are parsed like Go url.ParseQuery', () => {
  it('drops pairs with a bad escape or a semicolon, as the apiserver does', () => {
    const q = parseGoQuery('labelSelector=a%ZZ&resourceVersion=0&x=a;b&fieldSelector=a+b%3Dc&&watch');
    assert.deepEqual(
      [...q],
      [
        ['resourceVersion', '0'],
        ['fieldSelector', 'a b=c'],
        ['watch', ''],
      ],
    );
    assert.deepEqual(
      [...parseGoQuery('resourceVersion=1&resourceVersion=2')],
      [
        ['resourceVersion', '1'],
        ['resourceVersion', '2'],
      ],
    );
    assert.equal(parseGoQuery('n=caf%C3%A9').get('n'), 'café');
  });

  it('labelSelector=a%ZZ lists everything (apiserver: 200 unfiltered; the cache said 400)', async () => {
    const { agent, server } = mockServer([pod('a', 'p1', 7, { app: 'x' }), pod('a', 'p2', 8)]);
    try {
      for (const url of [
        '/api/v1/namespaces/a/pods?resourceVersion=0&labelSelector=a%ZZ',
        '/api/v1/namespaces/a/pods?resourceVersion=0&labelSelector=app%3Dx;b%3Dc',
      ]) {
        const r = await server.app.inject({ method: 'GET', url });
        assert.equal(r.statusCode, 200, r.body);
        const names = (JSON.parse(r.body) as { items: { metadata: { name: string } }[] }).items.map(
          (i) => i.metadata.name,
        );
        assert.deepEqual(names, ['p1', 'p2']);
      }
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('attack: Upgrade headers that are not stream protocols', () => {
  it('`Upgrade: h2c` (curl --http2) is served normally; `websocket` still gets the 501', async () => {
    const { agent, server } = mockServer([pod('a', 'p1', 7)]);
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (server.app.server.address() as AddressInfo).port;
      const status = (upgrade: string) =>
        new Promise<number>((resolve, reject) => {
          const req = request({
            host: '127.0.0.1',
            port,
            path: '/api/v1/namespaces/a/pods?resourceVersion=0',
            agent: false,
            headers: { connection: 'Upgrade', upgrade },
          });
          req.on('response', (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end();
        });
      assert.equal(await status('h2c'), 200);
      assert.equal(await status('websocket'), 501);
      assert.equal(await status('SPDY/3.1'), 501);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('attack: Connection naming Authorization', () => {
  it("keeps the client's Authorization (was dropped, then replaced by the proxy's credentials)", () => {
    const h = forwardRequestHeaders({
      authorization: 'Bearer limited-user',
      connection: 'close, Authorization, x-hop',
      'x-hop': '1',
    });
    assert.equal(h.authorization, 'Bearer limited-user');
    assert.equal(h['x-hop'], undefined);
  });
});

describe('attack: absolute-form request targets', () => {
  it('GET http://host/api/... is served as its path (the apiserver does; was a 503)', async () => {
    assert.equal(originForm('http://evil.example/api/v1/pods?watch=1'), '/api/v1/pods?watch=1');
    assert.equal(originForm('HTTPS://h:1?x=1'), '/?x=1');
    assert.equal(originForm('/api/v1/pods'), '/api/v1/pods');
    assert.equal(originForm('*'), '*');

    const { agent, server } = mockServer([pod('a', 'p1', 7)]);
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (server.app.server.address() as AddressInfo).port;
      const head = await new Promise<string>((resolve, reject) => {
        const s = connect(port, '127.0.0.1', () =>
          s.write(
            'GET http://evil.example/api/v1/namespaces/a/pods?resourceVersion=0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
          ),
        );
        let data = '';
        s.on('data', (d: Buffer) => {
          data += d.toString();
        });
        s.on('end', () => resolve(data));
        s.on('error', reject);
      });
      assert.match(head, /^HTTP\/1\.1 200 /);
      assert.match(head, /"name":"p1"/);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('attack: Status bodies are byte-identical to Go encoding/json', () => {
  it('escapes < > & as \\u003c \\u003e \\u0026 (GET .../pods/x%3Cy&z: apiserver `x\\u003cy\\u0026z`)', async () => {
    const { agent, server } = mockServer();
    try {
      const r = await server.app.inject({
        method: 'GET',
        url: '/api/v1/namespaces/a/pods/x%3Cy%26z?resourceVersion=0',
      });
      assert.equal(r.statusCode, 404);
      assert.equal(
        r.body,
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \\"x\\u003cy\\u0026z\\" not found","reason":"NotFound","details":{"name":"x\\u003cy\\u0026z","kind":"pods"},"code":404}',
      );
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('attack: watches the cache declines still count against --max-watchers', () => {
  it('a second RV="" watch passed upstream (cache not synced) gets 429 with maxWatchers=1', async () => {
    const held: ServerResponse[] = [];
    const upstream = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      held.push(res);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const agent = new Agent();
    const cache = new FakeCache();
    cache.synced = false;
    const server = buildServer({
      upstream: {
        server: new URL(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`),
        dispatcher: agent,
        longRunningDispatcher: agent,
        authorization: () => undefined,
      },
      caches: [cache],
      codec: fakeCodec,
      consistentReads: 'cache',
      logger: silentLogger,
      maxWatchers: 1,
      syncWaitMs: 0,
    });
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (server.app.server.address() as AddressInfo).port;
    const open: ReturnType<typeof request>[] = [];
    const watch = () =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/api/v1/pods?watch=1', agent: false },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', (err) => (err.message === 'socket hang up' ? undefined : reject(err)));
        req.end();
        open.push(req);
      });
    try {
      assert.equal(await watch(), 200);
      assert.equal(await watch(), 429);
    } finally {
      for (const r of open) r.destroy();
      for (const r of held) r.destroy();
      await server.shutdown();
      await agent.close();
      upstream.closeAllConnections();
      await new Promise((r) => upstream.close(r));
    }
  });
});

describe('attack: continue together with resourceVersion=N', () => {
  it('is passed upstream (apiserver: 400 "specifying resource version is not allowed when using continue")', async () => {
    const { agent, server } = mockServer([pod('a', 'p1', 7), pod('a', 'p2', 8)]);
    const pool = agent.get('https://apiserver.test:6443');
    const token = encodeContinue('a/p1', 9n);
    const url = `/api/v1/pods?limit=1&continue=${token}&resourceVersion=5`;
    pool.intercept({ method: 'GET', path: url }).reply(400, '{"upstream":true}');
    try {
      const r = await server.app.inject({ method: 'GET', url });
      assert.equal(r.statusCode, 400);
      assert.equal(r.body, '{"upstream":true}');
      // Without an RV (or with RV=0) the token is still served from the cache.
      const c = await server.app.inject({ method: 'GET', url: `/api/v1/pods?limit=1&continue=${token}` });
      assert.equal(c.statusCode, 200, c.body);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});
