/**
 * Issue 15, caches started on demand (`--resources=auto`), against the fixture apiserver with the
 * proxy run as `npm start` runs it (src/cli.ts):
 * - the first WATCH of an uncached resource (bookmarks allowed, as a client-go reflector sends
 *   it) passes upstream (reason `not-cached`) and starts a cache; once it is synced that
 *   passed-through watch is ended cleanly (the chunked answer finishes) and the client's
 *   re-watch is served from the cache, as are LISTs, equal to direct;
 * - the apiserver sees one watch of the resource (the proxy's reflector) while it is cached,
 *   none after the idle timeout stopped the cache (its objects and bytes gone from /debug/cache
 *   and /metrics), and `/readyz` never waits for on-demand caches;
 * - an excluded resource (`secrets`) passes upstream and starts nothing;
 * - a CRD deleted drops its cache (`resource-gone`); re-created, it is cached again.
 * The resources (controllerrevisions.apps, a CRD of this file's own group) are watched by no
 * other e2e file, so the apiserver's watch counts are this file's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

const GROUP = 'e2e-auto.example.com';
const CRD = `gadgets.${GROUP}`;

const revision = (name: string) => ({
  apiVersion: 'apps/v1',
  kind: 'ControllerRevision',
  metadata: { name, labels: { app: 'on-demand' } },
  revision: 1,
  data: { k: name },
});

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: CRD },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

interface DebugEntry {
  resource: string;
  group: string;
  origin: string;
  synced: boolean;
  objects: number;
  bytes: number;
  watchers: number;
  started: string;
  lastUsed: string | null;
}

describe('issue 15: caches started on demand (--resources=auto)', () => {
  let f: Fixture;
  let proxy: CliProxy;
  let ns: string;
  let agent: Agent;
  const get = async (base: string, path: string, token = f.tokens.admin) => {
    const r = await request(`${base}${path}`, {
      dispatcher: agent,
      headers: { accept: 'application/json', authorization: `Bearer ${token}` },
    });
    return { status: r.statusCode, body: await r.body.text() };
  };
  const debugCache = async () =>
    (JSON.parse((await get(proxy.ops, '/debug/cache')).body) as { ready: boolean; resources: DebugEntry[] })
      .resources;
  const entry = async (resource: string) => (await debugCache()).find((e) => e.resource === resource);
  const proxyMetrics = async () => (await get(proxy.ops, '/metrics')).body;
  const apiserverWatches = async (resource: string) =>
    metricSum((await get(f.server, '/metrics')).body, 'apiserver_longrunning_requests', {
      resource,
      verb: 'WATCH',
    });
  const names = (body: string) =>
    (JSON.parse(body) as { items: { metadata: { name: string } }[] }).items
      .map((i) => i.metadata.name)
      .sort();

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('on-demand');
    for (const n of ['r1', 'r2', 'r3']) {
      const c = await f.kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(revision(n)) });
      assert.equal(c.code, 0, c.stderr);
    }
    proxy = await startProxy(f, {
      run: 'cli',
      resources: 'auto',
      args: ['--auto-idle-timeout', '4s', '--log-level', 'info'],
    });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
    await f?.kubectl(['delete', 'crd', CRD, '--ignore-not-found', '--wait=false']);
  });

  test('first WATCH passes through and starts a cache; it is ended once synced, the re-watch and LISTs come from the cache; idle: stopped, accounting 0', async () => {
    const path = `/apis/apps/v1/namespaces/${ns}/controllerrevisions`;
    assert.equal(await apiserverWatches('controllerrevisions'), 0, 'nothing watches them before');
    assert.equal((await get(proxy.ops, '/readyz')).body, 'ok', 'auto alone: ready at once');
    // The first request: a WATCH as an informer's reflector sends it (`allowWatchBookmarks=true`:
    // only such watches are ended at the handover; `kubectl get -w` stays passed through, see
    // on-demand-handover.test.ts).
    const direct = await get(f.server, path);
    const rv = (JSON.parse(direct.body) as { metadata: { resourceVersion: string } }).metadata
      .resourceVersion;
    const started = Date.now();
    const w = await request(`${proxy.url}${path}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`, {
      headers: { accept: 'application/json', ...proxy.auth },
      bodyTimeout: 0,
    });
    assert.equal(w.statusCode, 200);
    // Ended cleanly by the proxy once the cache synced: the body completes (no reset, no error).
    const passed = await w.body.text();
    assert.equal(passed, '', 'no event happened during the passed-through watch');
    assert.ok(Date.now() - started < 20_000, 'ended within the sync time');
    const e = await entry('controllerrevisions');
    assert.ok(e, 'an on-demand cache exists');
    assert.equal(e.origin, 'auto');
    assert.equal(e.synced, true);
    assert.equal(e.objects, 3);
    let m = await proxyMetrics();
    assert.equal(
      metricSum(m, 'kube_cache_proxy_requests_total', {
        verb: 'WATCH',
        resource: 'controllerrevisions',
        served_from: 'upstream',
        reason: 'not-cached',
      }),
      1,
    );
    assert.equal(metricSum(m, 'kube_cache_proxy_on_demand_caches_total', { event: 'started' }), 1);
    assert.equal(
      metricSum(m, 'kube_cache_proxy_watch_cache_info', { resource: 'controllerrevisions', origin: 'auto' }),
      1,
    );

    // The re-watch is served from the cache: an object created directly arrives on it.
    const list = await get(proxy.url, path);
    assert.equal(list.status, 200);
    assert.deepEqual(names(list.body), names(direct.body));
    const listRv = (JSON.parse(list.body) as { metadata: { resourceVersion: string } }).metadata
      .resourceVersion;
    const ac = new AbortController();
    const w2 = await request(`${proxy.url}${path}?watch=1&resourceVersion=${listRv}`, {
      headers: { accept: 'application/json', ...proxy.auth },
      bodyTimeout: 0,
      signal: ac.signal,
    });
    assert.equal(w2.statusCode, 200);
    const c = await f.kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(revision('r4')) });
    assert.equal(c.code, 0, c.stderr);
    let seen = '';
    const chunks = w2.body[Symbol.asyncIterator]();
    while (!seen.includes('"r4"')) {
      const next = await chunks.next();
      assert.equal(next.done, false, `watch ended early: ${seen}`);
      seen += String(next.value);
    }
    const ev = JSON.parse(seen.split('\n')[0]!) as {
      type: string;
      object: { kind: string; metadata: { name: string } };
    };
    assert.deepEqual(
      [ev.type, ev.object.kind, ev.object.metadata.name],
      ['ADDED', 'ControllerRevision', 'r4'],
    );
    assert.equal((await entry('controllerrevisions'))?.watchers, 1);
    ac.abort();
    await eventually('watcher closed', 10_000, async () =>
      (await entry('controllerrevisions'))?.watchers === 0 ? true : undefined,
    );
    m = await proxyMetrics();
    for (const verb of ['LIST', 'WATCH'])
      assert.equal(
        metricSum(m, 'kube_cache_proxy_requests_total', {
          verb,
          resource: 'controllerrevisions',
          served_from: 'cache',
        }),
        1,
        `${verb} served from the cache`,
      );
    // One upstream watch: the reflector's (the passed-through one is gone).
    assert.equal(await apiserverWatches('controllerrevisions'), 1);
    assert.equal((await get(proxy.ops, '/readyz')).body, 'ok');

    // Idle (no request, no watcher) for 4 s: the cache is stopped and freed.
    await eventually('idle cache stopped', 30_000, async () =>
      (await entry('controllerrevisions')) === undefined ? true : undefined,
    );
    m = await proxyMetrics();
    assert.equal(
      metricSum(m, 'kube_cache_proxy_on_demand_caches_total', { event: 'stopped', reason: 'idle' }),
      1,
    );
    for (const gauge of ['watch_cache_objects', 'watch_cache_bytes', 'watch_cache_info'])
      assert.equal(
        metricSum(m, `kube_cache_proxy_${gauge}`, { resource: 'controllerrevisions' }),
        0,
        `${gauge} of the stopped cache`,
      );
    await eventually('upstream watch gone', 20_000, async () =>
      (await apiserverWatches('controllerrevisions')) === 0 ? true : undefined,
    );
    // The next LIST passes upstream and starts it again.
    const again = await get(proxy.url, path);
    assert.deepEqual(names(again.body), ['r1', 'r2', 'r3', 'r4']);
    await eventually('cached again', 20_000, async () =>
      (await entry('controllerrevisions'))?.synced ? true : undefined,
    );
  });

  test('an excluded resource (secrets) passes upstream and starts nothing', async () => {
    const r = await get(proxy.url, `/api/v1/namespaces/${ns}/secrets`);
    const d = await get(f.server, `/api/v1/namespaces/${ns}/secrets`);
    assert.equal(r.status, d.status);
    assert.deepEqual(names(r.body), names(d.body));
    await new Promise((res) => setTimeout(res, 500));
    assert.equal(await entry('secrets'), undefined);
    const m = await proxyMetrics();
    assert.equal(
      metricSum(m, 'kube_cache_proxy_on_demand_caches_total', { event: 'refused', reason: 'excluded' }),
      1,
    );
  });

  test('a CRD deleted drops its on-demand cache; re-created, it is cached again', async () => {
    const path = `/apis/${GROUP}/v1/namespaces/${ns}/gadgets`;
    const apply = async () => {
      const c = await f.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) });
      assert.equal(c.code, 0, c.stderr);
      const w = await f.kubectl(['wait', '--for=condition=Established', `crd/${CRD}`, '--timeout=60s']);
      assert.equal(w.code, 0, w.stderr);
      await eventually('gadgets served', 30_000, async () =>
        (await get(f.server, path)).status === 200 ? true : undefined,
      );
    };
    await apply();
    const cached = () =>
      eventually('gadgets cached', 30_000, async () => {
        const r = await get(proxy.url, path);
        assert.equal(r.status, 200, r.body);
        return (await entry('gadgets'))?.synced ? true : undefined;
      });
    await cached();
    const del = await f.kubectl(['delete', 'crd', CRD, '--wait=true', '--timeout=60s']);
    assert.equal(del.code, 0, del.stderr);
    await eventually('gadgets cache dropped', 60_000, async () =>
      (await entry('gadgets')) === undefined ? true : undefined,
    );
    const m = await proxyMetrics();
    assert.equal(
      metricSum(m, 'kube_cache_proxy_on_demand_caches_total', { event: 'stopped', reason: 'resource-gone' }),
      1,
    );
    // Gone: the proxy answers what the apiserver answers.
    const gone = await get(proxy.url, path);
    assert.equal(gone.status, (await get(f.server, path)).status);
    await apply();
    await cached();
  });
});
