/**
 * Issue 15 attack finding: a CRD deleted and re-created at once under the same group, version
 * and plural but with another `scope`. The on-demand cache's reflector may see no 404 (its watch
 * ends, its relist answers 410 then 200 from the new CRD); the apiserver's own cacher is torn
 * down with the CRD's storage. The proxy asks discovery again after every relist of an
 * on-demand cache and stops it when the scope changed (`resource-gone`); the next request
 * caches the resource anew with its new scope. Against the real apiserver, compared with what
 * it answers directly:
 * - Namespaced → Cluster: the namespaced path answers 404 (it answered 200 `{"items":[]}` from
 *   the old cache);
 * - Cluster → Namespaced: the namespaced path is served from the cache again (it passed upstream
 *   forever, `namespace-for-cluster-scoped`), with the objects the apiserver lists;
 * - a configured (`--resources`) CRD re-created Cluster-scoped: its cache stops being served (the
 *   namespaced path answers the apiserver's 404) and an error names the change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

/** The CRD `sprockets` of `group`, v1, with the given scope. */
const crd = (group: string, scope: 'Namespaced' | 'Cluster') => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `sprockets.${group}` },
  spec: {
    group,
    scope,
    names: { plural: 'sprockets', singular: 'sprocket', kind: 'Sprocket', listKind: 'SprocketList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
});

const TO_CLUSTER = 'e2e-rescope.example.com';
const TO_NAMESPACED = 'e2e-rescope-ns.example.com';
const CONFIGURED = 'e2e-rescope-cfg.example.com';

describe('issue 15: a CRD re-created with another scope', () => {
  let f: Fixture;
  let proxy: CliProxy;
  let agent: Agent;
  const get = async (base: string, path: string) => {
    const r = await request(`${base}${path}`, {
      dispatcher: agent,
      headers: { accept: 'application/json', authorization: `Bearer ${f.tokens.admin}` },
    });
    return { status: r.statusCode, body: await r.body.text() };
  };
  const debugEntry = async (group: string) =>
    (
      JSON.parse((await get(proxy.ops, '/debug/cache')).body) as {
        resources: { resource: string; group: string; synced: boolean; origin: string }[];
      }
    ).resources.find((e) => e.resource === 'sprockets' && e.group === group);
  const servedFromCache = async (group: string) =>
    sum(parsePrometheus((await get(proxy.ops, '/metrics')).body), 'kube_cache_proxy_requests_total', {
      group,
      resource: 'sprockets',
      served_from: 'cache',
    });
  const apply = async (group: string, scope: 'Namespaced' | 'Cluster') => {
    const c = await f.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd(group, scope)) });
    assert.equal(c.code, 0, c.stderr);
    const w = await f.kubectl([
      'wait',
      '--for=condition=Established',
      `crd/sprockets.${group}`,
      '--timeout=60s',
    ]);
    assert.equal(w.code, 0, w.stderr);
  };
  const recreate = async (group: string, scope: 'Namespaced' | 'Cluster') => {
    const del = await f.kubectl(['delete', 'crd', `sprockets.${group}`, '--wait=true', '--timeout=60s']);
    assert.equal(del.code, 0, del.stderr);
    await apply(group, scope);
    await eventually(`sprockets.${group} served again`, 30_000, async () =>
      (await get(f.server, `/apis/${group}/v1/sprockets`)).status === 200 ? true : undefined,
    );
  };
  /** A cache of `group`'s sprockets started by a LIST of `path` and synced. */
  const cached = async (group: string, path: string) =>
    eventually(`sprockets.${group} cached`, 30_000, async () => {
      assert.equal((await get(proxy.url, path)).status, 200);
      return (await debugEntry(group))?.synced === true ? true : undefined;
    });

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    proxy = await startProxy(f, { run: 'cli', resources: 'auto', args: ['--log-level', 'info'] });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
    for (const g of [TO_CLUSTER, TO_NAMESPACED, CONFIGURED])
      await f?.kubectl(['delete', 'crd', `sprockets.${g}`, '--ignore-not-found', '--wait=false']);
  });

  test('Namespaced → Cluster: the namespaced path answers as the apiserver does (404), not 200 from the old cache', async () => {
    const clusterPath = `/apis/${TO_CLUSTER}/v1/sprockets`;
    const nsPath = `/apis/${TO_CLUSTER}/v1/namespaces/default/sprockets`;
    await apply(TO_CLUSTER, 'Namespaced');
    await cached(TO_CLUSTER, clusterPath);
    const before = await get(proxy.url, nsPath);
    assert.equal(before.status, 200, before.body);
    await recreate(TO_CLUSTER, 'Cluster');
    const direct = await get(f.server, nsPath);
    assert.equal(direct.status, 404, direct.body);
    // Stopped by the 404 of a relist (the CRD gone) or by the re-discovery after a relist that
    // succeeded against the new CRD; either way not left answering with the old scope.
    const stopped = (l: Record<string, unknown>) =>
      l.msg === 'on-demand cache stopped' &&
      l.reason === 'resource-gone' &&
      l.resource === `sprockets.${TO_CLUSTER}`;
    await eventually('the old cache stopped (resource-gone)', 30_000, async () =>
      proxy.logs().some(stopped) ? true : undefined,
    );
    for (let i = 0; i < 3; i++) {
      const viaProxy = await get(proxy.url, nsPath);
      assert.equal(viaProxy.status, 404, `proxy answered ${viaProxy.body}`);
      assert.equal(viaProxy.body, direct.body, 'the apiserver’s own 404, passed through');
      await new Promise((r) => setTimeout(r, 1_000));
    }
    // The cluster path is cached again (by the requests above), from the new CRD.
    await cached(TO_CLUSTER, clusterPath);
    assert.deepEqual(
      JSON.parse((await get(proxy.url, clusterPath)).body).items,
      JSON.parse((await get(f.server, clusterPath)).body).items,
    );
    assert.equal(proxy.logs().filter(stopped).length, 1, 'stopped once');
    assert.equal((await get(proxy.url, nsPath)).status, 404, 'stays 404');
  });

  test('Cluster → Namespaced: the namespaced path is served from the cache again, equal to the apiserver', async () => {
    const clusterPath = `/apis/${TO_NAMESPACED}/v1/sprockets`;
    const nsPath = `/apis/${TO_NAMESPACED}/v1/namespaces/default/sprockets`;
    await apply(TO_NAMESPACED, 'Cluster');
    await cached(TO_NAMESPACED, clusterPath);
    assert.equal((await get(f.server, nsPath)).status, 404);
    await recreate(TO_NAMESPACED, 'Namespaced');
    const made = await f.kubectl(['apply', '-n', 'default', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: `${TO_NAMESPACED}/v1`,
        kind: 'Sprocket',
        metadata: { name: 's1' },
      }),
    });
    assert.equal(made.code, 0, made.stderr);
    const direct = await get(f.server, nsPath);
    assert.equal(direct.status, 200, direct.body);
    await eventually('the namespaced path served from the cache', 60_000, async () => {
      const n = await servedFromCache(TO_NAMESPACED);
      const r = await get(proxy.url, nsPath);
      assert.equal(r.status, 200, r.body);
      return (await servedFromCache(TO_NAMESPACED)) > n ? true : undefined;
    });
    const viaProxy = JSON.parse((await get(proxy.url, nsPath)).body) as {
      items: { metadata: { name: string } }[];
    };
    assert.deepEqual(
      viaProxy.items.map((i) => i.metadata.name),
      (JSON.parse(direct.body) as { items: { metadata: { name: string } }[] }).items.map(
        (i) => i.metadata.name,
      ),
    );
    assert.deepEqual(
      viaProxy.items.map((i) => i.metadata.name),
      ['s1'],
    );
  });

  test('a configured (--resources) CRD re-created Cluster-scoped stops being served from the cache: the apiserver answers, an error is logged', async () => {
    const clusterPath = `/apis/${CONFIGURED}/v1/sprockets`;
    const nsPath = `/apis/${CONFIGURED}/v1/namespaces/default/sprockets`;
    await apply(CONFIGURED, 'Namespaced');
    const configured = await startProxy(f, {
      run: 'cli',
      resources: `sprockets.${CONFIGURED}`,
      args: ['--log-level', 'info'],
    });
    try {
      await eventually('configured sprockets synced', 30_000, async () => {
        const r = await request(`${configured.ops}/readyz`, { dispatcher: agent });
        return (await r.body.text()) === 'ok' ? true : undefined;
      });
      assert.equal((await get(configured.url, nsPath)).status, 200);
      await recreate(CONFIGURED, 'Cluster');
      const direct = await get(f.server, nsPath);
      assert.equal(direct.status, 404);
      const changed = (l: Record<string, unknown>) =>
        l.level === 50 &&
        l.resource === `sprockets.${CONFIGURED}` &&
        l.change === 'scope Namespaced → Cluster';
      await eventually('the scope change logged as an error', 90_000, async () =>
        configured.logs().some(changed) ? true : undefined,
      );
      const line = configured.logs().find(changed)!;
      assert.match(
        String(line.msg),
        /no longer served from the cache, its requests pass upstream; restart the proxy/,
      );
      const viaProxy = await get(configured.url, nsPath);
      assert.equal(viaProxy.status, 404, viaProxy.body);
      assert.equal(viaProxy.body, direct.body);
      assert.equal((await get(configured.url, clusterPath)).status, 200);
    } finally {
      await configured.stop();
    }
  });
});
