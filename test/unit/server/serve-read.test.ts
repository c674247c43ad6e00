/**
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, it } from 'node:test';
import { encodeContinue } from '../../../src/apimachinery/continue-token.ts';
import { cacheCodec } from '../../../src/cache/codec.ts';
import { BATCH_BYTES } from '../../../src/server/filled-body.ts';
import { until } from '../../support/eventually.ts';
import { FakeCache, fakeCodec, mockServer, pod, podsInfo } from '../../support/fake-cache.ts';
import { logLines } from '../../support/log-lines.ts';

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

describe('reads at a compacted RV (cache/compaction-floor.ts)', () => {
  it('Exact, legacy exact and continue reads at or below the floor go upstream; above it and other reads ask nothing', async () => {
    const cache = new FakeCache();
    cache.compactedFloor = 7n;
    cache.objects = [pod('a', 'p1', 7), pod('a', 'p2', 8)];
    const { agent, server } = mockServer([], { caches: [cache] });
    agent
      .get('https://apiserver.test:6443')
      .intercept({ path: () => true, method: 'GET' })
      .reply(410, '{"kind":"Status","upstream":true,"code":410,"reason":"Expired"}')
      .persist();
    const from = async (query: string) => {
      cache.calls = [];
      const r = await server.app.inject({ method: 'GET', url: `/api/v1/pods?${query}` });
      return { code: r.statusCode, upstream: r.body.includes('"upstream":true'), calls: cache.calls };
    };
    const token = (rv: bigint) => encodeContinue('a/p1', rv);
    try {
      assert.deepEqual(await from('resourceVersion=7&resourceVersionMatch=Exact'), {
        code: 410,
        upstream: true,
        calls: ['compactedAt 7'],
      });
      assert.deepEqual(await from('resourceVersion=6&limit=1'), {
        code: 410,
        upstream: true,
        calls: ['compactedAt 6'],
      });
      assert.deepEqual(await from(`limit=1&continue=${token(7n)}`), {
        code: 410,
        upstream: true,
        calls: ['compactedAt 7'],
      });
      // Above the floor: the cache answers.
      assert.deepEqual(await from('resourceVersion=8&resourceVersionMatch=Exact'), {
        code: 200,
        upstream: false,
        calls: ['compactedAt 8', 'list ns= exact=8'],
      });
      assert.deepEqual(await from(`limit=1&continue=${token(8n)}`), {
        code: 200,
        upstream: false,
        calls: ['compactedAt 8', 'list ns= exact= limit=1 continue=8:a/p1\u0000'],
      });
      // Reads that are not at an exact RV never ask.
      assert.deepEqual(await from('resourceVersion=0'), {
        code: 200,
        upstream: false,
        calls: ['list ns= exact='],
      });
      assert.deepEqual((await from('resourceVersion=5&resourceVersionMatch=NotOlderThan')).calls, [
        'list ns= exact=',
      ]);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('a Table printer that throws: the apiserver’s answer to a failing TableConvertor, logged', () => {
  // `status.conditions` not a list: printPod throws a TypeError. The proxy answered 500
  // InternalError "Internal error occurred: …" with a cause, where the apiserver answers a
  // printer's error (`asTable` → `ErrorToAPIStatus`, default case) 500 with its text and no reason.
  const broken = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'bad', namespace: 'a', uid: 'uid-bad', resourceVersion: '9' },
    status: { conditions: 7 },
  };
  it('LIST and GET: 500, the error’s text, no reason; one log line with the resource (no token)', async () => {
    const { logger, lines } = logLines();
    const { agent, server } = mockServer(
      [pod('a', 'p1', 7), { raw: Buffer.from(JSON.stringify(broken)), object: broken }],
      { logger },
    );
    const headers = {
      accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
      authorization: 'Bearer secret-token-xyz',
    };
    try {
      for (const url of [
        '/api/v1/namespaces/a/pods?resourceVersion=0',
        '/api/v1/namespaces/a/pods/bad?resourceVersion=0',
      ]) {
        const r = await server.app.inject({ url, headers });
        assert.equal(r.statusCode, 500, url);
        const status = JSON.parse(r.body) as Record<string, unknown>;
        assert.equal(status.kind, 'Status');
        assert.equal(status.code, 500);
        assert.equal(status.status, 'Failure');
        assert.equal(status.reason, undefined, 'no reason (StatusReasonUnknown)');
        assert.equal(status.details, undefined);
        assert.match(String(status.message), /^[^\n]+$/);
        assert.doesNotMatch(String(status.message), /^Internal error occurred/);
      }
      // The other pod still prints.
      const ok = await server.app.inject({ url: '/api/v1/namespaces/a/pods/p1?resourceVersion=0', headers });
      assert.equal(ok.statusCode, 200);
      await until('two log lines', () => lines.filter((l) => l.msg === 'Table printer failed').length === 2);
      const failed = lines.filter((l) => l.msg === 'Table printer failed');
      assert.deepEqual(
        failed.map((l) => [l.resource, l.name, (l.err as { type: string }).type]),
        [
          ['pods', undefined, 'TypeError'],
          ['pods', 'bad', 'TypeError'],
        ],
      );
      assert.ok(!JSON.stringify(lines).includes('secret-token-xyz'), 'no token in the log');
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('a big LIST is copied into batches, not written one item at a time (issue 32)', () => {
  it('2,000 items of ~1.1 KB: the same bytes in ~10 writes (was: a corked write per item and comma, 4,001)', async () => {
    const filler = 'x'.repeat(1000);
    const objects = Array.from({ length: 2000 }, (_, i) =>
      pod('a', `p${String(i).padStart(4, '0')}`, i + 1, { filler }),
    );
    const { server } = mockServer(objects, { codec: { ...fakeCodec, encodeList: cacheCodec.encodeList } });
    const proto = http.ServerResponse.prototype;
    const write = proto.write;
    let writes = 0;
    proto.write = function (this: http.ServerResponse, ...args: Parameters<typeof write>) {
      writes++;
      return write.apply(this, args);
    } as typeof write;
    try {
      const r = await server.app.inject({
        method: 'GET',
        url: '/api/v1/namespaces/a/pods?resourceVersion=0',
      });
      assert.equal(r.statusCode, 200);
      assert.equal(Number(r.headers['content-length']), r.rawPayload.length);
      const list = JSON.parse(r.payload) as { items: Array<{ metadata: { name: string } }> };
      assert.equal(list.items.length, 2000);
      assert.equal(list.items[1999]!.metadata.name, 'p1999');
      const batches = Math.ceil(r.rawPayload.length / BATCH_BYTES);
      assert.ok(writes <= batches + 1, `${writes} writes for ${r.rawPayload.length} bytes`);
    } finally {
      proto.write = write;
    }
  });
});

describe('attack: a client that does not read a batched LIST', () => {
  it('holds its --max-inflight slot until the answer is written or it leaves, as a gzip answer', async () => {
    // ~11 MB in 10,000 items: copied into batches (more than 16 chunks), more than the loopback
    // socket buffers take in. Before, the batched answer released its slot at once, so every
    // such client held two 256 KiB batches outside any limit.
    const objects = Array.from({ length: 10_000 }, (_, i) =>
      pod('a', `p${String(i).padStart(5, '0')}`, i + 1, { filler: 'x'.repeat(1000) }),
    );
    const { server } = mockServer(objects, {
      codec: { ...fakeCodec, encodeList: cacheCodec.encodeList },
      maxInflight: 1,
    });
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (server.app.server.address() as { port: number }).port;
    const url = '/api/v1/namespaces/a/pods?resourceVersion=0';
    const status = () =>
      new Promise<number>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, path: url, agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
    const slow = (await import('node:net')).connect(port, '127.0.0.1');
    slow.on('error', () => {});
    try {
      slow.write(`GET ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      slow.pause();
      await until('the unread answer holds the one slot', async () => (await status()) === 429, 30_000, 50);
      slow.destroy();
      await until('its slot is free once it left', async () => (await status()) === 200, 30_000, 50);
    } finally {
      slow.destroy();
      await server.shutdown();
    }
  });
});
