/**
 * A watch client that stops reading, against the real server + real watch cache on loopback,
 * with a FakeClock. Parked (the default): when it reads again, the response drains and its
 * watcher resumes from the history: every event once, in order, no 410. Without parking
 * (`--max-parked-watchers=0`): once its watcher overflows (closed by the cache), the server cuts
 * the connection at the next stall check (STALLED_CHECK_MS) instead of waiting for a graceful end
 * the client will never read; a reading client on the same cache gets every event.
 */

import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { request } from 'undici';
import type { ResourceInfo } from '../../src/apimachinery/gvr.ts';
import { cacheCodec } from '../../src/cache/codec.ts';
import { ParkedWatchers } from '../../src/cache/parked-watchers.ts';
import { WatchCache } from '../../src/cache/watch-cache.ts';
import { buildServer } from '../../src/server/app.ts';
import { STALLED_CHECK_MS } from '../../src/server/serve-watch.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { until } from '../support/eventually.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { openPausedWatch, readWatchEvents } from '../support/raw-watch.ts';
import { resourceInfo } from '../support/resource-info.ts';

const info: ResourceInfo = resourceInfo('v1', 'configmaps', 'ConfigMap', { verbs: ['list', 'watch'] });

const cm = (name: string, rv: number, blob: string) => {
  const object = {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name, namespace: 'ns', uid: `u-${name}`, resourceVersion: String(rv) },
    data: { blob },
  };
  return { raw: Buffer.from(JSON.stringify(object)), object };
};

const path = '/api/v1/namespaces/ns/configmaps?watch=1&resourceVersion=10&timeoutSeconds=3600';

/** The real server over `cache` alone (no upstream: every request the cache cannot answer fails), on a free loopback port. */
async function serveCache(cache: WatchCache, clock: FakeClock) {
  const server = buildServer({
    upstream: {
      server: new URL('http://127.0.0.1:9'),
      dispatcher: undefined as never,
      longRunningDispatcher: undefined as never,
      authorization: () => undefined,
    },
    caches: [cache],
    codec: cacheCodec,
    consistentReads: 'cache',
    clock,
    logger: silentLogger,
  });
  await server.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = server.app.server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : 0,
    shutdown: () => server.shutdown(),
  };
}

test('without parking, a stalled watch is cut once its watcher overflowed; the reading one gets every event', async () => {
  const clock = new FakeClock();
  const cache = new WatchCache({
    resource: info,
    clock,
    watcherBufferEvents: 10,
    parkedWatchers: new ParkedWatchers(0),
  });
  cache.replace([], '10');
  const server = await serveCache(cache, clock);
  const port = server.port;
  let stalled: Socket | undefined;
  try {
    stalled = openPausedWatch(`http://127.0.0.1:${port}`, path);
    const r = await request(`http://127.0.0.1:${port}${path}`);
    assert.equal(r.statusCode, 200);
    await until('both watchers registered', () => cache.stats().watchers === 2);
    // 300 events of 64 KiB: far more than socket buffers + stream + 10 queued events.
    const N = 300;
    const blob = 'x'.repeat(64 * 1024);
    let received = 0;
    let lastRV = 0;
    const reading = (async () => {
      let buf = '';
      for await (const c of r.body) {
        buf += c.toString();
        let i = buf.indexOf('\n');
        while (i >= 0) {
          const ev = JSON.parse(buf.slice(0, i)) as { object: { metadata: { resourceVersion: string } } };
          buf = buf.slice(i + 1);
          i = buf.indexOf('\n');
          received++;
          lastRV = Number(ev.object.metadata.resourceVersion);
          if (received === N) return;
        }
      }
    })();
    for (let i = 0; i < N; i++) {
      cache.add(cm(`c${i}`, 11 + i, blob));
      // Real upstream events arrive spread out: the reading client takes each batch before the
      // next (on a loaded machine it would otherwise overflow its 10-event buffer as well).
      if (i % 10 === 9) await until('the reading client took the batch', () => received === i + 1);
    }
    await reading;
    assert.equal(received, N);
    assert.equal(lastRV, 10 + N);
    assert.equal(cache.stats().watchers, 1, 'the stalled watcher overflowed and was closed');
    r.body.destroy();

    // Its connection is still open (nothing read the end): the stall check cuts it.
    let bytes = 0;
    let eof = false;
    stalled.on('data', (c: Buffer) => {
      bytes += c.length;
    });
    stalled.on('end', () => {
      eof = true;
    });
    await clock.step(STALLED_CHECK_MS);
    stalled.resume();
    await until('the stalled connection closed', () => eof);
    assert.ok(bytes > 0 && bytes < N * 64 * 1024, `${bytes} bytes: cut short`);
  } finally {
    stalled?.destroy();
    await server.shutdown();
  }
});

test('parked: a client that stopped reading gets every event once, in order, when it reads again (no 410)', async () => {
  const clock = new FakeClock();
  const cache = new WatchCache({ resource: info, clock, watcherBufferEvents: 10 });
  cache.replace([], '10');
  const server = await serveCache(cache, clock);
  const port = server.port;
  let stalled: Socket | undefined;
  try {
    stalled = openPausedWatch(`http://127.0.0.1:${port}`, path);
    await until('the watcher registered', () => cache.stats().watchers === 1);
    // 300 events of 64 KiB: far more than socket buffers + stream + 10 queued events.
    const N = 300;
    const blob = 'x'.repeat(64 * 1024);
    for (let i = 0; i < N; i++) {
      cache.add(cm(`c${i}`, 11 + i, blob));
      if (i % 10 === 9) await new Promise((res) => setImmediate(res));
    }
    assert.equal(cache.stats().parkedWatchers, 1, 'the stalled watcher was parked');
    assert.equal(cache.stats().watchers, 1);
    // Parked is not closed: the stall check leaves the connection open.
    await clock.step(STALLED_CHECK_MS);
    const got = await readWatchEvents(stalled, N);
    assert.equal(got.length, N);
    assert.deepEqual(
      got.map((e) => Number(e.object.metadata.resourceVersion)),
      Array.from({ length: N }, (_, i) => 11 + i),
    );
    assert.equal(
      got.every((e) => e.type === 'ADDED'),
      true,
    );
    assert.equal(cache.stats().parkedWatchers, 0, 'caught up');
    assert.equal(cache.stats().terminatedWatchers, 0);
  } finally {
    stalled?.destroy();
    await server.shutdown();
  }
});
