import assert from 'node:assert/strict';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Agent } from 'undici';
import { buildServer, type KubeServer } from '../../../src/server/app.ts';
import { MAX_BUFFERED_BODY_BYTES } from '../../../src/server/passthrough.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { FakeCache, fakeCodec } from '../../support/fake-cache.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

describe('pass-through against a local upstream', () => {
  let upstream: Server;
  let proxy: KubeServer;
  let base: string;
  const seen: Seen[] = [];
  let handler: (req: IncomingMessage, res: ServerResponse, body: string) => void = () => {};
  const agent = new Agent();
  const longAgent = new Agent({ bodyTimeout: 0 });

  before(async () => {
    upstream = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        handler(req, res, body);
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    const cache = new FakeCache();
    proxy = buildServer({
      upstream: {
        server: new URL(`http://127.0.0.1:${port}/prefix`),
        dispatcher: agent,
        longRunningDispatcher: longAgent,
        authorization: async () => 'Bearer proxy-token',
      },
      caches: [cache],
      codec: fakeCodec,
      consistentReads: 'cache',
      logger: silentLogger,
      maxInflight: 2,
      maxWatchers: 1,
    });
    await proxy.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(proxy.app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await proxy.shutdown();
    await new Promise((r) => upstream.close(r));
    await agent.close();
    await longAgent.close();
  });

  const call = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
    new Promise<{ status: number; headers: IncomingMessage['headers']; body: string }>((resolve, reject) => {
      const req = httpRequest(`${base}${path}`, { method, headers }, (res) => {
        let b = '';
        res.on('data', (c: Buffer) => {
          b += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: b }));
      });
      req.on('error', reject);
      req.end(body);
    });

  it('streams the body of any patch type unchanged, keeps end-to-end headers, drops hop-by-hop ones', async () => {
    seen.length = 0;
    handler = (_req, res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        warning: '299 - "x is deprecated"',
        'retry-after': '3',
        'content-encoding': 'identity',
        connection: 'keep-alive, x-upstream-hop',
        'x-upstream-hop': 'secret',
        'keep-alive': 'timeout=5',
      });
      res.end('{"ok":1}');
    };
    const patch = '[{"op":"add","path":"/data/c","value":"3"}]';
    const r = await call(
      'PATCH',
      '/api/v1/namespaces/a/configmaps/x?fieldManager=m',
      {
        'content-type': 'application/json-patch+json',
        connection: 'x-client-hop',
        'x-client-hop': '1',
        'proxy-authorization': 'p',
      },
      patch,
    );
    assert.equal(r.status, 200);
    assert.equal(r.body, '{"ok":1}');
    assert.equal(r.headers.warning, '299 - "x is deprecated"');
    assert.equal(r.headers['retry-after'], '3');
    assert.equal(r.headers['content-encoding'], 'identity');
    assert.equal(r.headers['x-upstream-hop'], undefined);
    const s = seen[0]!;
    assert.equal(s.method, 'PATCH');
    assert.equal(s.url, '/prefix/api/v1/namespaces/a/configmaps/x?fieldManager=m');
    assert.equal(s.body, patch);
    assert.equal(s.headers['content-type'], 'application/json-patch+json');
    assert.equal(s.headers['x-client-hop'], undefined);
    assert.equal(s.headers['proxy-authorization'], undefined);
    assert.equal(s.headers.authorization, 'Bearer proxy-token');
  });

  it('a short chunked answer goes out whole with its Content-Length; HEAD, 204 and a large answer keep their framing (issue 12)', async () => {
    const big = 'x'.repeat(200 * 1024);
    handler = (req, res) => {
      if (req.url?.endsWith('/empty')) {
        res.writeHead(204);
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      // Written in two chunks without a length: the upstream answers chunked.
      res.write(req.url?.endsWith('/big') ? big.slice(0, 1000) : '{"a":');
      res.end(req.url?.endsWith('/big') ? big.slice(1000) : '1}');
    };
    const small = await call('GET', '/api/v1/namespaces/a/configmaps/x');
    assert.equal(small.body, '{"a":1}');
    assert.equal(small.headers['content-length'], '7');
    assert.equal(small.headers['transfer-encoding'], undefined);
    const head = await call('HEAD', '/api/v1/namespaces/a/configmaps/x');
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], undefined);
    const none = await call('GET', '/api/v1/namespaces/a/configmaps/empty');
    assert.equal(none.status, 204);
    assert.equal(none.headers['content-length'], undefined);
    const large = await call('GET', '/api/v1/namespaces/a/configmaps/big');
    assert.equal(large.body, big);
    assert.equal(large.headers['transfer-encoding'], 'chunked');
  });

  it('a large short answer streams with backpressure: a client that reads late gets every byte (issue 12, dispatch path)', async () => {
    // 32 MiB in 64 KiB chunks: far more than the sockets buffer, so the proxy must pause the
    // upstream read while the client does not read (the upstream cannot write it all), and
    // resume on drain.
    const chunk = Buffer.alloc(64 * 1024);
    const chunks = 512;
    let i = 0;
    let writtenBeforeRead = 0;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const next = () => {
        while (i < chunks) {
          chunk.fill(i % 251);
          i++;
          if (!res.write(Buffer.from(chunk))) return void res.once('drain', next);
        }
        res.end();
      };
      next();
    };
    const body = await new Promise<Buffer>((resolve, reject) => {
      const req = httpRequest(`${base}/api/v1/namespaces/a/configmaps/huge`, (res) => {
        res.pause();
        const parts: Buffer[] = [];
        setTimeout(() => {
          writtenBeforeRead = i;
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => resolve(Buffer.concat(parts)));
          res.resume();
        }, 300);
      });
      req.on('error', reject);
      req.end();
    });
    assert.ok(
      writtenBeforeRead < chunks / 2,
      `upstream wrote ${writtenBeforeRead} of ${chunks} chunks unread`,
    );
    assert.equal(body.length, chunks * chunk.length);
    for (let k = 0; k < chunks; k++) assert.equal(body[k * chunk.length], k % 251, `chunk ${k}`);
  });

  it('a client that leaves during a short answer ends the upstream request and frees its slot', async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((r) => {
      upstreamClosed = r;
    });
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // More than the 64 KiB held back, so the client sees the head, then nothing more.
      res.write(Buffer.alloc(100 * 1024, 0x20));
      res.on('close', () => upstreamClosed());
    };
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${base}/api/v1/namespaces/a/configmaps/hang`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => {});
      req.on('close', resolve);
      req.setTimeout(5000, () => reject(new Error('no answer')));
      req.end();
    });
    await closed;
    // Both slots (maxInflight 2) are free again.
    handler = (_req, res) => res.end('{}');
    const [a, b] = await Promise.all([call('GET', '/version'), call('GET', '/version')]);
    assert.deepEqual([a.status, b.status], [200, 200]);
  });

  it('a request body is forwarded byte for byte whether it is read whole (small) or streamed (large, chunked)', async () => {
    seen.length = 0;
    handler = (_req, res) => res.end('{}');
    const small = '{"metadata":{"annotations":{"a":"1"}}}';
    const large = JSON.stringify({ data: { x: 'y'.repeat(MAX_BUFFERED_BODY_BYTES + 1000) } });
    for (const body of [small, large])
      assert.equal(
        (await call('PUT', '/api/v1/namespaces/a/configmaps/x', { 'content-type': 'application/json' }, body))
          .status,
        200,
      );
    // Without a Content-Length (chunked): streamed.
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${base}/api/v1/namespaces/a/configmaps`, { method: 'POST' }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      req.write('{"a":');
      setTimeout(() => req.end('2}'), 20);
    });
    assert.equal(chunked, 200);
    assert.deepEqual(
      seen.map((x) => [
        x.method,
        x.body.length,
        x.headers['content-length'] ?? x.headers['transfer-encoding'],
      ]),
      [
        ['PUT', small.length, String(small.length)],
        ['PUT', large.length, String(large.length)],
        ['POST', 7, 'chunked'],
      ],
    );
    assert.equal(seen[0]!.body, small);
    assert.equal(seen[1]!.body, large);
  });

  it("forwards the client's own Authorization when present", async () => {
    seen.length = 0;
    handler = (_req, res) => res.end('{}');
    await call('GET', '/version', { authorization: 'Bearer client-token' });
    assert.equal(seen[0]!.headers.authorization, 'Bearer client-token');
  });

  it('records the RV of writes to cached resources before answering (read-your-writes)', async () => {
    handler = (_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end('{"kind":"Pod","metadata":{"name":"p","resourceVersion":"777"}}');
    };
    const r = await call(
      'POST',
      '/api/v1/namespaces/a/pods',
      { 'content-type': 'application/yaml' },
      'metadata: {name: p}\n',
    );
    assert.equal(r.status, 201);
    assert.equal(proxy.writes.required('pods.'), 777n);
    await call('POST', '/api/v1/namespaces/a/configmaps', { 'content-type': 'application/json' }, '{}');
    assert.equal(proxy.writes.required('configmaps.'), 0n);
  });

  it('passes a read of a cached resource larger than the RV tee prefix upstream whole (regression: stalled at 64 KiB)', async () => {
    const items = Array.from({ length: 3000 }, (_, i) => ({
      metadata: { name: `p${i}`, resourceVersion: String(i + 1) },
    }));
    const big = JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: '9000' }, items });
    assert.ok(big.length > 2 * 64 * 1024);
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // Several writes, so the answer arrives in many chunks.
      for (let i = 0; i < big.length; i += 16 * 1024) res.write(big.slice(i, i + 16 * 1024));
      res.end();
    };
    // A parameter the cache does not implement is answered upstream.
    const r = await call('GET', '/api/v1/namespaces/a/pods?fooBar=1');
    assert.equal(r.status, 200);
    assert.equal(r.body.length, big.length);
    assert.equal(r.body, big);
  });

  it('issue 28: a write answer of a resource no cache serves streams after its first 64 KiB, as before the tee was attached to every write (not held up to the 8 MiB tee cap)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const part = 'x'.repeat(100 * 1024);
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(part);
      void gate.then(() => res.end('y'));
    };
    // configmaps: no cache here; the answer's first 100 KiB arrive before the upstream ends it.
    const got = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(`${base}/api/v1/namespaces/a/configmaps`, { method: 'POST' }, (res) => {
        let b = '';
        res.on('data', (c: Buffer) => {
          b += c.toString();
          if (b.length >= part.length) release();
        });
        res.on('end', () => resolve(b));
      });
      req.on('error', reject);
      req.end('{}');
    });
    assert.equal(got, `${part}y`);
  });

  it('a server-side dry run through the proxy is no write: the resource does not go blind (regression)', async () => {
    handler = (_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      // What the apiserver answers to a dry-run create: no resourceVersion.
      res.end('{"kind":"Pod","apiVersion":"v1","metadata":{"name":"d","namespace":"a"}}');
    };
    const r = await call(
      'POST',
      '/api/v1/namespaces/a/pods?dryRun=All',
      { 'content-type': 'application/json' },
      '{}',
    );
    assert.equal(r.status, 201);
    assert.equal(proxy.writes.isBlind('pods.'), false);
  });

  it('streams a pass-through watch event by event', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"type":"ADDED","object":{}}\n');
      void gate.then(() => res.end('{"type":"DELETED","object":{}}\n'));
    };
    const first = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(`${base}/api/v1/configmaps?watch=1`, (res) => {
        res.once('data', (c: Buffer) => {
          resolve(c.toString());
          release();
        });
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(first, '{"type":"ADDED","object":{}}\n');
  });

  it('answers 503 Status when the apiserver is unreachable', async () => {
    const dead = buildServer({
      upstream: {
        server: new URL('http://127.0.0.1:1'),
        dispatcher: agent,
        longRunningDispatcher: agent,
        authorization: () => undefined,
      },
      caches: [],
      codec: fakeCodec,
      consistentReads: 'cache',
      logger: silentLogger,
    });
    const r = await dead.app.inject({ url: '/version' });
    assert.equal(r.statusCode, 503);
    assert.equal(JSON.parse(r.body).reason, 'ServiceUnavailable');
  });

  it('caps in-flight requests with 429 + Retry-After', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let arrived = 0;
    let bothArrived!: () => void;
    const both = new Promise<void>((r) => {
      bothArrived = r;
    });
    handler = (_req, res) => {
      if (++arrived === 2) bothArrived();
      void gate.then(() => res.end('{}'));
    };
    const a = call('GET', '/version');
    const b = call('GET', '/version');
    await both;
    const c = await call('GET', '/version');
    assert.equal(c.status, 429);
    assert.equal(c.headers['retry-after'], '1');
    assert.deepEqual(JSON.parse(c.body), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Too many requests, please try again later.',
      reason: 'TooManyRequests',
      details: { retryAfterSeconds: 1 },
      code: 429,
    });
    release();
    assert.equal((await a).status, 200);
    assert.equal((await b).status, 200);
  });

  it('passes HTTP Upgrade (exec/attach/port-forward) upstream: a refused upgrade answers as upstream did', async () => {
    handler = (_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"kind":"Status","code":404}');
    };
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${base}/api/v1/namespaces/a/pods/p/exec`, {
        headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1' },
      });
      req.on('response', (res) => {
        let b = '';
        res.on('data', (c: Buffer) => {
          b += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode!, body: b }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 404);
    assert.equal(body, '{"kind":"Status","code":404}');
    assert.equal(seen.at(-1)?.url, '/prefix/api/v1/namespaces/a/pods/p/exec');
    assert.equal(seen.at(-1)?.headers.upgrade, 'SPDY/3.1');
  });
});
