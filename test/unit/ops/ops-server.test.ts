import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createMetrics } from '../../../src/ops/metrics.ts';
import { buildOpsServer, startOpsServer } from '../../../src/ops/ops-server.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { deploymentsStatus, FakeStatusSource, podsStatus } from '../../support/fake-status-source.ts';

const NOW = 1_700_000_010_000;
const TEXT = 'text/plain; charset=utf-8';

describe('ops server', () => {
  const source = new FakeStatusSource();
  let delayMs = 0;
  let shuttingDown = false;
  let app: FastifyInstance;

  before(async () => {
    const clock = new FakeClock(NOW);
    app = buildOpsServer({
      metrics: createMetrics({ processMetrics: false, clock, source }),
      source,
      clock,
      eventLoop: { maxDelayMs: () => delayMs },
      maxEventLoopDelayMs: 5000,
      shuttingDown: () => shuttingDown,
    });
    await app.ready();
  });
  after(() => app.close());

  const get = async (url: string) => {
    const r = await app.inject({ method: 'GET', url });
    return { code: r.statusCode, type: r.headers['content-type'], body: r.body };
  };
  const reset = () => {
    source.list = [podsStatus(), deploymentsStatus()];
    delayMs = 0;
    shuttingDown = false;
  };

  it('/readyz is 503 until every resource synced, listing the one missing', async () => {
    reset();
    assert.deepEqual(await get('/readyz'), {
      code: 503,
      type: TEXT,
      body: '[+]ping ok\n[+]shutdown ok\n[+]cache-sync/pods ok\n[-]cache-sync/deployments.apps failed: not synced\nreadyz check failed\n',
    });
    source.list = [podsStatus(), deploymentsStatus({ lastError: 'deployments.apps is forbidden: list' })];
    assert.equal(
      (await get('/readyz')).body.split('\n')[3],
      '[-]cache-sync/deployments.apps failed: not synced: deployments.apps is forbidden: list',
    );
    source.list = [podsStatus(), deploymentsStatus({ synced: true })];
    assert.deepEqual(await get('/readyz'), { code: 200, type: TEXT, body: 'ok' });
    assert.deepEqual(await get('/readyz?verbose'), {
      code: 200,
      type: TEXT,
      body: '[+]ping ok\n[+]shutdown ok\n[+]cache-sync/pods ok\n[+]cache-sync/deployments.apps ok\nreadyz check passed\n',
    });
  });

  it('/readyz stays ready when the upstream stream is down after the first sync', async () => {
    reset();
    source.list = [podsStatus({ live: false, lastError: 'connection refused' })];
    assert.deepEqual(await get('/readyz'), { code: 200, type: TEXT, body: 'ok' });
  });

  it('/readyz fails once shutdown began', async () => {
    reset();
    source.list = [podsStatus()];
    shuttingDown = true;
    assert.deepEqual(await get('/readyz'), {
      code: 503,
      type: TEXT,
      body: '[+]ping ok\n[-]shutdown failed: process is shutting down\n[+]cache-sync/pods ok\nreadyz check failed\n',
    });
  });

  it('/readyz?exclude= and per-check paths', async () => {
    reset();
    assert.deepEqual(await get('/readyz?exclude=cache-sync/deployments.apps'), {
      code: 200,
      type: TEXT,
      body: 'ok',
    });
    assert.deepEqual(await get('/readyz/cache-sync/pods'), { code: 200, type: TEXT, body: 'ok' });
    assert.deepEqual(await get('/readyz/cache-sync/deployments.apps'), {
      code: 503,
      type: TEXT,
      body: 'internal server error: not synced\n',
    });
    assert.deepEqual(await get('/readyz/nope'), { code: 404, type: TEXT, body: '404 page not found\n' });
  });

  it('/livez is ok while the event loop keeps up, regardless of sync', async () => {
    reset();
    assert.deepEqual(await get('/livez'), { code: 200, type: TEXT, body: 'ok' });
    assert.deepEqual(await get('/livez?verbose'), {
      code: 200,
      type: TEXT,
      body: '[+]ping ok\n[+]event-loop ok\nlivez check passed\n',
    });
    delayMs = 6200.4;
    assert.deepEqual(await get('/livez'), {
      code: 503,
      type: TEXT,
      body: '[+]ping ok\n[-]event-loop failed: event loop delayed 6200ms (limit 5000ms)\nlivez check failed\n',
    });
  });

  it('/healthz combines liveness and readiness', async () => {
    reset();
    assert.deepEqual(await get('/healthz'), {
      code: 503,
      type: TEXT,
      body: '[+]ping ok\n[+]event-loop ok\n[+]shutdown ok\n[+]cache-sync/pods ok\n[-]cache-sync/deployments.apps failed: not synced\nhealthz check failed\n',
    });
    source.list = [podsStatus()];
    assert.deepEqual(await get('/healthz?verbose'), {
      code: 200,
      type: TEXT,
      body: '[+]ping ok\n[+]event-loop ok\n[+]shutdown ok\n[+]cache-sync/pods ok\nhealthz check passed\n',
    });
  });

  it('/metrics serves the Prometheus text format', async () => {
    reset();
    const r = await get('/metrics');
    assert.equal(r.code, 200);
    assert.equal(r.type, 'text/plain; version=0.0.4; charset=utf-8');
    assert.match(r.body, /^# TYPE kube_cache_proxy_reflector_synced gauge$/m);
    assert.match(r.body, /^kube_cache_proxy_reflector_synced\{group="apps",resource="deployments"\} 0$/m);
    assert.match(r.body, /^kube_cache_proxy_watch_cache_resource_version\{group="",resource="pods"\} 1234$/m);
  });

  it('/debug/cache returns the per-resource JSON', async () => {
    reset();
    const r = await get('/debug/cache');
    assert.equal(r.code, 200);
    assert.equal(r.type, 'application/json; charset=utf-8');
    assert.deepEqual(JSON.parse(r.body), {
      ready: false,
      resources: [
        {
          name: 'pods',
          group: '',
          version: 'v1',
          resource: 'pods',
          scope: '',
          namespace: '',
          phase: 'running',
          synced: true,
          live: true,
          resourceVersion: '1234',
          lastSyncTime: '2023-11-14T22:13:20.000Z',
          lastUsed: null,
          origin: 'configured',
          started: '2023-11-14T21:56:40.000Z',
          lastProgressTime: '2023-11-14T22:13:25.000Z',
          objects: 3,
          bytes: 4096,
          window: {
            events: 10,
            capacity: 100,
            bytes: 2048,
            oldestResourceVersion: '1200',
            oldestEventAgeSeconds: 20,
          },
          watchers: 2,
          lastError: null,
          relists: {},
          watchRestarts: 0,
          watchListFallbacks: 0,
          periodicBookmarks: true,
        },
        {
          name: 'deployments.apps',
          group: 'apps',
          version: 'v1',
          resource: 'deployments',
          scope: '',
          namespace: '',
          phase: 'running',
          synced: false,
          live: false,
          resourceVersion: '',
          lastSyncTime: null,
          lastUsed: null,
          origin: 'configured',
          started: '2023-11-14T21:56:40.000Z',
          lastProgressTime: null,
          objects: 0,
          bytes: 0,
          window: {
            events: 0,
            capacity: 100,
            bytes: 0,
            oldestResourceVersion: '',
            oldestEventAgeSeconds: null,
          },
          watchers: 0,
          lastError: null,
          relists: {},
          watchRestarts: 0,
          watchListFallbacks: 0,
          periodicBookmarks: false,
        },
      ],
    });
  });
});

describe('startOpsServer', () => {
  it('listens on a real loopback port and closes idempotently', async () => {
    const source = new FakeStatusSource([podsStatus()]);
    const ops = await startOpsServer({
      listen: { host: '127.0.0.1', port: 0 },
      metrics: createMetrics({ processMetrics: false, source }),
      source,
    });
    try {
      assert.match(ops.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const r = await fetch(`${ops.url}/livez?verbose`);
      assert.equal(r.status, 200);
      assert.equal(await r.text(), '[+]ping ok\n[+]event-loop ok\nlivez check passed\n');
    } finally {
      await ops.close();
      await ops.close();
    }
    await assert.rejects(fetch(`${ops.url}/livez`));
  });
});
