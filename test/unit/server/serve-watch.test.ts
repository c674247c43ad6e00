/**
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { MAX_TIMER_MS, watchTimeoutMs } from '../../../src/server/serve-watch.ts';
import { until } from '../../support/eventually.ts';
import { FakeCache, mockServer, pod } from '../../support/fake-cache.ts';
import { logLines } from '../../support/log-lines.ts';

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

describe('a watch resuming below the window asks the cache to extend it first (docs/design.md §6)', () => {
  it('only for a plain watch at RV N > 0: not RV 0, unset, or a watch-list', async () => {
    const { agent, cache, server } = mockServer();
    const asked: bigint[] = [];
    const c = cache as typeof cache & { extendWindowBack(rv: bigint): Promise<boolean> };
    c.extendWindowBack = async (rv: bigint) => {
      asked.push(rv);
      return true;
    };
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (server.app.server.address() as AddressInfo).port;
    const open = (query: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path: `/api/v1/pods?watch=1&${query}`, agent: false },
          (res) => {
            resolve(res.statusCode ?? 0);
            req.destroy();
          },
        );
        req.on('error', (err) => (err.message === 'socket hang up' ? undefined : reject(err)));
        req.end();
      });
    try {
      assert.equal(await open('resourceVersion=3'), 200);
      assert.deepEqual(asked, [3n]);
      assert.equal(cache.watches.at(-1)!.q.resourceVersion, 3n, 'then watched from that RV');
      assert.equal(await open('resourceVersion=0'), 200);
      assert.equal(
        await open('resourceVersion=3&sendInitialEvents=true&resourceVersionMatch=NotOlderThan'),
        200,
      );
      assert.deepEqual(asked, [3n]);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('a watch below the window at an RV this proxy just showed (a forwarded LIST) goes upstream, not 410', () => {
  it('found by the upstream e2e ResourceQuota status spec: its LIST started the on-demand cache', async () => {
    // The spec LISTs resourcequotas (answered upstream at RV 258: that LIST started the
    // on-demand cache), creates one (259), the cache syncs at 259, and the spec watches from
    // 258. The apiserver streams the ADDED at 259; the cache answered 410 "too old resource
    // version: 258 (259)" and the spec failed ("watch closed before UntilWithoutRetry timeout").
    const { agent, cache, server } = mockServer();
    const c = cache as typeof cache & { extendWindowBack(rv: bigint): Promise<boolean> };
    c.extendWindowBack = async (rv: bigint) => rv >= cache.windowStart;
    agent
      .get('https://apiserver.test:6443')
      .intercept({ path: '/api/v1/pods?watch=1&resourceVersion=4', method: 'GET' })
      .reply(200, '{"type":"ADDED","object":{"kind":"Pod","metadata":{"resourceVersion":"5"}}}\n');
    try {
      // Not shown by this proxy (a client bringing an RV from elsewhere): the cache's 410, as before.
      const other = server.app.inject({ method: 'GET', url: '/api/v1/pods?watch=1&resourceVersion=3' });
      for (let i = 0; i < 100 && cache.watches.length === 0; i++) await new Promise((r) => setImmediate(r));
      assert.equal(cache.watches.length, 1, 'from the cache');
      assert.equal(cache.watches[0]!.q.resourceVersion, 3n);
      cache.watches[0]!.stream.end();
      await other;
      cache.watches.length = 0;
      // The forwarded LIST that started the cache showed the client RV 4 (the upstream's).
      server.writes.shown('pods.', 4n, Date.now());
      const answer = server.app.inject({ method: 'GET', url: '/api/v1/pods?watch=1&resourceVersion=4' });
      // The old code opened a watcher of the cache (which sends the 410): end it so the request ends.
      for (let i = 0; i < 100 && cache.watches.length === 0; i++) await new Promise((r) => setImmediate(r));
      for (const w of cache.watches) w.stream.end();
      const below = await answer;
      assert.equal(cache.watches.length, 0, 'no watcher of the cache (it would send 410)');
      assert.equal(below.statusCode, 200);
      assert.equal(
        below.body,
        '{"type":"ADDED","object":{"kind":"Pod","metadata":{"resourceVersion":"5"}}}\n',
      );
      // In the window: from the cache, as before.
      c.extendWindowBack = async () => true;
      void server.app.inject({
        method: 'GET',
        url: '/api/v1/pods?watch=1&resourceVersion=6&timeoutSeconds=1',
      });
      for (let i = 0; i < 100 && cache.watches.length === 0; i++) await new Promise((r) => setImmediate(r));
      assert.equal(cache.watches.length, 1);
      assert.equal(cache.watches[0]!.q.resourceVersion, 6n);
      cache.watches[0]!.stream.end();
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('issue 29 item 5c: a negative watch timeoutSeconds', () => {
  it('timeoutSeconds=-1 answers 200 and ends at once with no event, as the apiserver (its watch context is already done)', async () => {
    // kube-apiserver v1.37.2, side by side: `watch=1&timeoutSeconds=-1` (RV "", "0", N, watch-list)
    // is 200, chunked application/json, an empty body (now and then one event or an ERROR
    // "context deadline exceeded" slips out first: a race of its watcher); the cache streamed
    // the whole snapshot.
    /** Streams its snapshot at once, as the watch cache does for RV "0" and watch-lists. */
    class SnapshotCache extends FakeCache {
      override watch(q: Parameters<FakeCache['watch']>[0]) {
        const w = super.watch(q);
        this.watches.at(-1)!.stream.write('{"type":"ADDED","object":{"kind":"Pod"}}\n');
        return w;
      }
    }
    const cache = new SnapshotCache();
    const { agent, server } = mockServer([], { caches: [cache] });
    cache.objects = [pod('a', 'p1', 7), pod('a', 'p2', 8)];
    try {
      for (const q of [
        'resourceVersion=0',
        'resourceVersion=0&allowWatchBookmarks=true',
        'sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0',
        'resourceVersion=7',
      ]) {
        const r = await server.app.inject({
          method: 'GET',
          url: `/api/v1/pods?watch=1&timeoutSeconds=-1&${q}`,
        });
        assert.equal(r.statusCode, 200, q);
        assert.equal(r.headers['content-type'], 'application/json', q);
        assert.equal(r.body, '', q);
      }
      assert.equal(cache.watches.length, 0, 'no watcher is started');
      // timeoutSeconds=0 is the server's default duration, not an immediate end.
      assert.equal(
        watchTimeoutMs(
          { timeoutSeconds: 0 } as Parameters<typeof watchTimeoutMs>[0],
          {
            minRequestTimeoutMs: 1000,
            random: () => 0,
          } as Parameters<typeof watchTimeoutMs>[1],
        ),
        1000,
      );
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('attack: a watch event the printer or encoder cannot write ends that watch, not the process', () => {
  // Found with a custom resource nested 3,000 deep printed by a Table watch: the printer's
  // RangeError was thrown from the stream's 'data' handler and killed the proxy. The apiserver's
  // watch handler ends the watch on an encoder error (`handlers/watch.go`: HandleError, return).
  it('a Table watch whose printer throws ends with the events before it, logged once; the server keeps serving', async () => {
    const { logger, lines } = logLines();
    const { agent, cache, server } = mockServer([pod('a', 'p1', 3)], { logger });
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      const pending = server.app.inject({
        url: '/api/v1/pods?watch=1&resourceVersion=7',
        headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io', authorization: 'Bearer tok-123' },
      });
      await new Promise((r) => setImmediate(r));
      const w = cache.watches[0]!;
      w.stream.write(
        '{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"ok","namespace":"a","resourceVersion":"8"}}}\n',
      );
      // `status.conditions` not a list: printPod throws (a TypeError).
      w.stream.write(
        '{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"bad","namespace":"a","resourceVersion":"9"},"status":{"conditions":7}}}\n',
      );
      w.stream.write(
        '{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"after","namespace":"a","resourceVersion":"10"}}}\n',
      );
      const r = await pending;
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(uncaught, []);
      assert.equal(r.statusCode, 200);
      const events = r.body.trim().split('\n');
      assert.equal(events.length, 1);
      assert.equal(JSON.parse(events[0]!).object.rows[0].cells[0], 'ok');
      assert.equal(w.stream.writableEnded, true, 'the watcher is closed');
      // The server still answers.
      const list = await server.app.inject({ url: '/api/v1/namespaces/a/pods/p1' });
      assert.equal(list.statusCode, 200);
      // The end is logged (it was silent): one line naming the resource and the error, no token.
      await until('the log line', () =>
        lines.some((l) => l.msg === 'watch ended: failed to encode watch event'),
      );
      const ended = lines.filter((l) => l.msg === 'watch ended: failed to encode watch event');
      assert.equal(ended.length, 1);
      assert.deepEqual(
        [ended[0]!.resource, ended[0]!.encoding, (ended[0]!.err as { type: string }).type],
        ['pods', 'table', 'TypeError'],
      );
      assert.ok(!JSON.stringify(lines).includes('tok-123'), 'no token in the log');
    } finally {
      process.off('uncaughtException', onUncaught);
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('attack: an event line of chunks larger than the response buffer does not stall the watch', () => {
  // Found side by side on the fixture (v1.37.2): a watch-list of a namespace holding a 300 KB
  // ConfigMap sent its ADDED and then nothing (the apiserver: ADDED, then the initial-events-end
  // BOOKMARK); so did a watch of custom resources after a 162 KB one. The line's chunks are
  // written corked: Node's chunked response buffers them and `write` answers false without
  // setting writableNeedDrain, so the 'drain' the watch waited for never came.
  it('a 300 KB chunked line then a small one: both reach the client', async () => {
    const { agent, cache, server } = mockServer();
    // The cache's watch streams are in object mode: a line may be an array of chunks.
    cache.watch = (q) => {
      const stream = new PassThrough({ objectMode: true });
      cache.watches.push({ q, stream });
      return { stream, close: () => stream.end(), closed: false };
    };
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (server.app.server.address() as AddressInfo).port;
      const body = await new Promise<string>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: '/api/v1/pods?watch=1&resourceVersion=7&timeoutSeconds=5',
            agent: false,
          },
          (res) => {
            let got = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => {
              got += d;
              if (got.split('\n').length > 2) resolve(got);
            });
            res.on('end', () => resolve(got));
          },
        );
        req.on('error', reject);
        req.end();
        const waitWatch = () => {
          const w = cache.watches[0];
          if (!w) {
            setTimeout(waitWatch, 5);
            return;
          }
          const big = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"big"},"spec":{"x":"${'x'.repeat(300_000)}"}}`;
          w.stream.write([Buffer.from('{"type":"ADDED","object":'), Buffer.from(big), Buffer.from('}\n')]);
          w.stream.write(
            Buffer.from('{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"small"}}}\n'),
          );
        };
        waitWatch();
      });
      const lines = body.split('\n').filter(Boolean);
      assert.equal(lines.length, 2);
      assert.equal(JSON.parse(lines[1]!).object.metadata.name, 'small');
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});
