/**
 * Issue 15, `--resources=auto` for a proxy identity without cluster-wide list/watch, against the
 * fixture apiserver (simple mode, the proxy run as `npm start` runs it, src/cli.ts):
 * - (a) the proxy's identity has a Role for configmaps list/watch in namespace A only: a LIST in
 *   A starts a cache restricted to A (its one upstream watch is namespaced:
 *   `apiserver_longrunning_requests{scope="namespace"}`), later LISTs and WATCHes in A are served
 *   from it and equal the apiserver's answers to the same client directly; a LIST in B and a
 *   cluster-wide LIST pass upstream (`namespace-outside-cache`) with exactly the apiserver's
 *   answer (its 403 Status for the proxy's identity, the list for the admin) and start nothing;
 * - (a, `--delegated-auth`) every client is still authorized for that cache: the admin is
 *   served A from it, a client without RBAC gets the apiserver-worded 403 (the proxy's own
 *   SubjectAccessReview for A, the apiserver's for B and all namespaces);
 * - (b) the proxy's identity may not list or watch configmaps at all (the fixture's `none`):
 *   every request passes upstream with the apiserver's 403, nothing is started, and the refusal
 *   is counted once for several requests (remembered).
 * Clients send the proxy's own token (simple mode: served from the cache) unless said otherwise.
 * Nothing else watches configmaps in namespace scope on this file's apiserver but the
 * apiserver's own loopback clients, which are counted before.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture, writeKubeconfig } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

const SA = 'nsscope-proxy';

interface Reply {
  status: number;
  body: string;
  /** No `Audit-Id` header: the apiserver sets one on every answer it gives. */
  fromCache: boolean;
}

interface List {
  kind: string;
  apiVersion: string;
  metadata: { resourceVersion: string };
  items: { metadata: { name: string; namespace: string } }[];
}

interface DebugEntry {
  resource: string;
  origin: string;
  namespace: string;
  synced: boolean;
  objects: number;
}

describe('issue 15: on-demand caches restricted to the requested namespace', () => {
  let f: Fixture;
  let agent: Agent;
  let nsA: string;
  let nsB: string;
  let token: string;
  const get = async (base: string, path: string, bearer: string | undefined): Promise<Reply> => {
    const r = await request(`${base}${path}`, {
      dispatcher: agent,
      headers: { accept: 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    });
    return {
      status: r.statusCode,
      body: await r.body.text(),
      fromCache: r.headers['audit-id'] === undefined,
    };
  };
  const apiserverMetrics = async () => (await get(f.server, '/metrics', f.tokens.admin)).body;
  const configmapWatches = async (scope: string) =>
    metricSum(await apiserverMetrics(), 'apiserver_longrunning_requests', {
      resource: 'configmaps',
      verb: 'WATCH',
      scope,
    });
  const configMap = (name: string, namespace: string) =>
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { k: name } });
  const apply = async (name: string, namespace: string) => {
    const c = await f.kubectl(['apply', '-f', '-'], { input: configMap(name, namespace) });
    assert.equal(c.code, 0, c.stderr);
  };

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    nsA = await f.newNamespace('nsscope-a');
    nsB = await f.newNamespace('nsscope-b');
    for (const [n, ns] of [
      ['a1', nsA],
      ['a2', nsA],
      ['b1', nsB],
    ] as const)
      await apply(n, ns);
    const items = [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: SA, namespace: 'kcp-system' } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: SA, namespace: nsA },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: SA, namespace: nsA },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: SA },
        subjects: [{ kind: 'ServiceAccount', name: SA, namespace: 'kcp-system' }],
      },
    ];
    const r = await f.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
    });
    assert.equal(r.code, 0, r.stderr);
    const t = await f.kubectl(['create', 'token', SA, '-n', 'kcp-system', '--duration=2h']);
    assert.equal(t.code, 0, t.stderr);
    token = t.stdout.trim();
  });
  after(async () => {
    await agent?.close();
  });

  describe('(a) an identity with a Role in namespace A only', () => {
    let proxy: CliProxy;
    const debugCache = async () =>
      (JSON.parse((await get(proxy.ops, '/debug/cache', undefined)).body) as { resources: DebugEntry[] })
        .resources;
    const proxyMetrics = async () => (await get(proxy.ops, '/metrics', undefined)).body;

    before(async () => {
      const kubeconfig = await writeKubeconfig(join(f.dir, `${SA}.kubeconfig`), {
        server: f.server,
        caFile: f.caFile,
        user: { token },
      });
      proxy = await startProxy(f, {
        run: 'cli',
        resources: 'auto',
        kubeconfig,
        args: ['--log-level', 'info'],
      });
    });
    after(async () => {
      await proxy?.stop();
    });

    test('a LIST in A starts a cache restricted to A; LISTs and WATCHes in A come from it, equal to direct; B and all namespaces pass upstream with the apiserver answer and start nothing', async () => {
      const pathA = `/api/v1/namespaces/${nsA}/configmaps`;
      const pathB = `/api/v1/namespaces/${nsB}/configmaps`;
      const before = { ns: await configmapWatches('namespace'), cluster: await configmapWatches('cluster') };

      // The first LIST passes upstream and starts the cache.
      const first = await get(proxy.url, pathA, token);
      const firstDirect = await get(f.server, pathA, token);
      assert.equal(first.status, 200, first.body);
      assert.equal(first.fromCache, false);
      assert.deepEqual((JSON.parse(first.body) as List).items, (JSON.parse(firstDirect.body) as List).items);
      await eventually('configmaps cached', 30_000, async () =>
        (await debugCache()).find((e) => e.resource === 'configmaps')?.synced ? true : undefined,
      );
      const entries = (await debugCache()).filter((e) => e.resource === 'configmaps');
      assert.deepEqual(
        entries.map((e) => [e.origin, e.namespace, e.objects]),
        [['auto', nsA, 2]],
      );
      const log = proxy
        .logs()
        .find((l) =>
          String(l.msg).startsWith('caching on demand: the first LIST/WATCH of it started a cache'),
        );
      assert.equal(
        log?.msg,
        `caching on demand: the first LIST/WATCH of it started a cache restricted to namespace ${nsA}`,
      );
      // Its reflector's one upstream watch is namespaced.
      await eventually('the reflector watches', 20_000, async () =>
        (await configmapWatches('namespace')) === before.ns + 1 ? true : undefined,
      );
      assert.equal(await configmapWatches('cluster'), before.cluster, 'no cluster-wide watch');
      let m = await proxyMetrics();
      assert.equal(
        metricSum(m, 'kube_cache_proxy_watch_cache_info', {
          resource: 'configmaps',
          origin: 'auto',
          namespace: nsA,
        }),
        1,
      );

      // LISTs in A: from the cache, equal to what the apiserver answers the same client.
      await apply('a3', nsA);
      const list = await eventually('a3 listed from the cache', 20_000, async () => {
        const r = await get(proxy.url, pathA, token);
        const names = (JSON.parse(r.body) as List).items.map((i) => i.metadata.name);
        return r.fromCache && names.includes('a3') ? r : undefined;
      });
      const direct = await get(f.server, pathA, token);
      const lc = JSON.parse(list.body) as List;
      const ld = JSON.parse(direct.body) as List;
      assert.deepEqual([lc.kind, lc.apiVersion, lc.items], [ld.kind, ld.apiVersion, ld.items]);
      assert.deepEqual(
        lc.items.map((i) => i.metadata.name),
        ['a1', 'a2', 'a3'],
      );
      const rv0 = await get(proxy.url, `${pathA}?resourceVersion=0`, token);
      assert.equal(rv0.fromCache, true);
      assert.deepEqual((JSON.parse(rv0.body) as List).items, ld.items);

      // A WATCH in A: from the cache; an object created directly arrives on it.
      const ac = new AbortController();
      const w = await request(`${proxy.url}${pathA}?watch=1&resourceVersion=${lc.metadata.resourceVersion}`, {
        headers: { accept: 'application/json', authorization: `Bearer ${token}` },
        bodyTimeout: 0,
        signal: ac.signal,
      });
      assert.equal(w.statusCode, 200);
      assert.equal(w.headers['audit-id'], undefined, 'served from the cache');
      await apply('a4', nsA);
      let seen = '';
      const chunks = w.body[Symbol.asyncIterator]();
      while (!seen.includes('"a4"')) {
        const next = await chunks.next();
        assert.equal(next.done, false, `watch ended early: ${seen}`);
        seen += String(next.value);
      }
      const ev = JSON.parse(seen.split('\n')[0]!) as { type: string; object: { metadata: { name: string } } };
      assert.deepEqual([ev.type, ev.object.metadata.name], ['ADDED', 'a4']);
      ac.abort();
      await w.body.text().catch(() => undefined);

      // B and all namespaces: upstream, exactly the apiserver's answer to each client.
      for (const path of [pathB, '/api/v1/configmaps', `${pathB}?watch=1`]) {
        const viaProxy = await get(proxy.url, path, token);
        const viaDirect = await get(f.server, path, token);
        assert.equal(viaProxy.fromCache, false, path);
        assert.equal(viaProxy.status, 403, `${path}: ${viaProxy.body}`);
        assert.equal(viaProxy.status, viaDirect.status);
        assert.deepEqual(JSON.parse(viaProxy.body), JSON.parse(viaDirect.body), path);
      }
      const forbidden = JSON.parse((await get(proxy.url, '/api/v1/configmaps', token)).body) as {
        kind: string;
        reason: string;
        message: string;
      };
      assert.deepEqual(
        [forbidden.kind, forbidden.reason, forbidden.message],
        [
          'Status',
          'Forbidden',
          `configmaps is forbidden: User "system:serviceaccount:kcp-system:${SA}" cannot list resource "configmaps" in API group "" at the cluster scope`,
        ],
      );
      // Another client (the admin; simple mode: other identity, its own credential upstream).
      for (const path of [pathB, '/api/v1/configmaps']) {
        const viaProxy = await get(proxy.url, path, f.tokens.admin);
        const viaDirect = await get(f.server, path, f.tokens.admin);
        assert.equal(viaProxy.status, 200, viaProxy.body);
        assert.equal(viaProxy.fromCache, false);
        const names = (b: string) =>
          (JSON.parse(b) as List).items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`).sort();
        assert.deepEqual(names(viaProxy.body), names(viaDirect.body), path);
      }
      await new Promise((r) => setTimeout(r, 500));
      m = await proxyMetrics();
      assert.equal(
        metricSum(m, 'kube_cache_proxy_requests_total', {
          resource: 'configmaps',
          served_from: 'upstream',
          reason: 'namespace-outside-cache',
        }),
        6,
        'B, all namespaces and the watch of B with its own token, the message read again, B and all as the admin',
      );
      assert.equal(
        metricSum(m, 'kube_cache_proxy_requests_total', {
          verb: 'LIST',
          resource: 'configmaps',
          served_from: 'cache',
        }) >= 2,
        true,
      );
      assert.equal(
        metricSum(m, 'kube_cache_proxy_requests_total', {
          verb: 'WATCH',
          resource: 'configmaps',
          served_from: 'cache',
        }),
        1,
      );
      assert.equal(metricSum(m, 'kube_cache_proxy_on_demand_caches_total', { event: 'started' }), 1);
      assert.equal(metricSum(m, 'kube_cache_proxy_on_demand_caches_total', { event: 'refused' }), 0);
      assert.deepEqual(
        (await debugCache()).filter((e) => e.resource === 'configmaps').map((e) => e.namespace),
        [nsA],
        'still one cache, of A',
      );
      assert.equal(await configmapWatches('namespace'), before.ns + 1);
      assert.equal(await configmapWatches('cluster'), before.cluster);
    });
  });

  describe('(a, --delegated-auth) each client is still authorized for the namespace-restricted cache', () => {
    let proxy: CliProxy;
    const crb = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${SA}-auth-delegator` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:auth-delegator' },
      subjects: [{ kind: 'ServiceAccount', name: SA, namespace: 'kcp-system' }],
    };

    before(async () => {
      // TokenReview and SubjectAccessReview for the clients; still no list/watch beyond A.
      const r = await f.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crb) });
      assert.equal(r.code, 0, r.stderr);
      const kubeconfig = await writeKubeconfig(join(f.dir, `${SA}-delegated.kubeconfig`), {
        server: f.server,
        caFile: f.caFile,
        user: { token },
      });
      proxy = await startProxy(f, {
        run: 'cli',
        resources: 'auto',
        kubeconfig,
        delegatedAuth: true,
        args: ['--log-level', 'info'],
      });
    });
    after(async () => {
      await proxy?.stop();
      await f?.kubectl(['delete', '-f', '-', '--ignore-not-found'], { input: JSON.stringify(crb) });
    });

    test('the admin is served A from the cache; a client without RBAC gets the apiserver-worded 403 for A, B and all namespaces', async () => {
      const pathA = `/api/v1/namespaces/${nsA}/configmaps`;
      const first = await get(proxy.url, pathA, f.tokens.admin);
      assert.equal(first.status, 200, first.body);
      const cached = await eventually('A served from the cache', 30_000, async () => {
        const r = await get(proxy.url, pathA, f.tokens.admin);
        return r.fromCache ? r : undefined;
      });
      const debug = JSON.parse((await get(proxy.ops, '/debug/cache', undefined)).body) as {
        resources: DebugEntry[];
      };
      assert.deepEqual(
        debug.resources.map((e) => [e.resource, e.namespace]),
        [['configmaps', nsA]],
      );
      const direct = await get(f.server, pathA, f.tokens.admin);
      assert.deepEqual((JSON.parse(cached.body) as List).items, (JSON.parse(direct.body) as List).items);
      for (const path of [pathA, `/api/v1/namespaces/${nsB}/configmaps`, '/api/v1/configmaps']) {
        const viaProxy = await get(proxy.url, path, f.tokens.none);
        const viaDirect = await get(f.server, path, f.tokens.none);
        assert.equal(viaProxy.status, 403, `${path}: ${viaProxy.body}`);
        assert.deepEqual(JSON.parse(viaProxy.body), JSON.parse(viaDirect.body), path);
      }
      // A's 403 comes from the proxy's own SubjectAccessReview (the cache path), the others from upstream.
      assert.equal((await get(proxy.url, pathA, f.tokens.none)).fromCache, true);
      const m = (await get(proxy.ops, '/metrics', undefined)).body;
      assert.equal(
        metricSum(m, 'kube_cache_proxy_authorization_decisions_total', { decision: 'denied' }),
        2,
        'the two LISTs of A by the client without RBAC',
      );
    });
  });

  describe('(b) an identity that may not list or watch configmaps at all', () => {
    let proxy: CliProxy;

    before(async () => {
      proxy = await startProxy(f, {
        run: 'cli',
        resources: 'auto',
        kubeconfig: f.kubeconfigs.none,
        args: ['--log-level', 'info'],
      });
    });
    after(async () => {
      await proxy?.stop();
    });

    test('requests pass upstream with the apiserver answer, nothing is started, the refusal is counted once', async () => {
      const pathA = `/api/v1/namespaces/${nsA}/configmaps`;
      const paths = [pathA, pathA, `${pathA}?watch=1`, '/api/v1/configmaps', pathA];
      const refused = async () =>
        metricSum(
          (await get(proxy.ops, '/metrics', undefined)).body,
          'kube_cache_proxy_on_demand_caches_total',
          {
            event: 'refused',
          },
        );
      // A client the apiserver refuses (the proxy's own `none` token, 403) is told nothing: it
      // makes the proxy consider no cache, not even review one (attack pass 2, finding 1).
      for (const path of paths) {
        const viaProxy = await get(proxy.url, path, f.tokens.none);
        const viaDirect = await get(f.server, path, f.tokens.none);
        assert.equal(viaProxy.fromCache, false, path);
        assert.equal(viaProxy.status, 403, `${path}: ${viaProxy.body}`);
        assert.equal(viaProxy.status, viaDirect.status);
        assert.deepEqual(JSON.parse(viaProxy.body), JSON.parse(viaDirect.body), path);
      }
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(await refused(), 0, 'apiserver-refused requests consider no cache');
      // A client the apiserver answers (admin): the proxy's identity is reviewed, refused once.
      for (const path of paths.filter((p) => !p.includes('watch'))) {
        const viaProxy = await get(proxy.url, path, f.tokens.admin);
        const viaDirect = await get(f.server, path, f.tokens.admin);
        assert.equal(viaProxy.fromCache, false, path);
        assert.equal(viaProxy.status, 200, `${path}: ${viaProxy.body}`);
        const names = (b: string) =>
          (JSON.parse(b) as List).items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`).sort();
        assert.deepEqual(names(viaProxy.body), names(viaDirect.body), path);
        // Reviews run meanwhile; the next request must find the refusal remembered.
        await new Promise((r) => setTimeout(r, 300));
      }
      const m = (await get(proxy.ops, '/metrics', undefined)).body;
      assert.equal(
        metricSum(m, 'kube_cache_proxy_on_demand_caches_total', { event: 'refused', reason: 'forbidden' }),
        1,
      );
      assert.equal(metricSum(m, 'kube_cache_proxy_on_demand_caches_total', { event: 'started' }), 0);
      assert.equal(
        metricSum(m, 'kube_cache_proxy_requests_total', {
          resource: 'configmaps',
          served_from: 'upstream',
          reason: 'not-cached',
        }),
        paths.length + paths.filter((p) => !p.includes('watch')).length,
      );
      const debug = JSON.parse((await get(proxy.ops, '/debug/cache', undefined)).body) as {
        resources: DebugEntry[];
      };
      assert.deepEqual(debug.resources, []);
      const refusals = proxy.logs().filter((l) => String(l.msg).startsWith('not caching on demand'));
      assert.deepEqual(
        refusals.map((l) => [l.resource, l.version, l.reason, l.namespace, l.msg]),
        [
          [
            'configmaps', // as /debug/cache names it
            'v1',
            'forbidden',
            nsA,
            `not caching on demand: the proxy's identity may not list it cluster-wide nor in namespace ${nsA}; its requests pass upstream`,
          ],
        ],
      );
    });
  });
});
