/**
 * A custom resource's Table through a `--resources=auto` proxy: its columns come from its CRD,
 * read from the `customresourcedefinitions.apiextensions.k8s.io` cache. With the custom
 * resource cached (an informer's plain LIST started it) but the CRDs not, `kubectl get` passed
 * upstream (`table-printer`) for ever: a Table starts no cache of its own resource, and nothing
 * started the CRDs. Now the first such Table, answered 2xx by the apiserver, starts the CRDs'
 * cache as a LIST of them would; the next ones are printed from the cache, equal to direct, and
 * keep the CRDs' cache in use.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

const AGE_IN_TEXT = /\b\d+[smhdy](\d+[smhd])?\b/g;
const printed = (out: string) =>
  out
    .split('\n')
    .map((l) => l.replace(AGE_IN_TEXT, 'AGE').replace(/\s+/g, ' ').trim())
    .filter((l) => l !== '');

describe("auto mode: a custom resource's Table starts the CRDs' cache it is printed from", () => {
  let f: Fixture;
  let proxy: CliProxy;
  let agent: Agent;
  let ns: string;
  const group = `t${Date.now().toString(36)}.example.com`;
  const ops = async (path: string) =>
    (await request(`${proxy.ops}${path}`, { dispatcher: agent })).body.text();
  const entry = async (resource: string) =>
    (
      JSON.parse(await ops('/debug/cache')) as {
        resources: { resource: string; synced: boolean; origin: string }[];
      }
    ).resources.find((e) => e.resource === resource);
  const metric = async (labels: Record<string, string>) =>
    sum(parsePrometheus(await ops('/metrics')), 'kube_cache_proxy_requests_total', labels);
  const via = (args: string[]) => f.kubectl(['-n', ns, ...args], { kubeconfig: proxy.kubeconfig });
  const direct = (args: string[]) => f.kubectl(['-n', ns, ...args]);

  before(async () => {
    f = await sharedFixture();
    agent = new Agent();
    ns = await f.newNamespace('ondemand-table-crd');
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `gizmos.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo', listKind: 'GizmoList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            additionalPrinterColumns: [
              { name: 'Size', type: 'integer', jsonPath: '.spec.size' },
              { name: 'Color', type: 'string', jsonPath: '.spec.color', priority: 1 },
            ],
          },
        ],
      },
    };
    let c = await f.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) });
    assert.equal(c.code, 0, c.stderr);
    c = await f.kubectl(['wait', '--for=condition=Established', `crd/gizmos.${group}`, '--timeout=60s']);
    assert.equal(c.code, 0, c.stderr);
    for (const [name, size, color] of [
      ['g1', 3, 'red'],
      ['g2', 5, 'blue'],
    ] as const) {
      const o = { apiVersion: `${group}/v1`, kind: 'Gizmo', metadata: { name }, spec: { size, color } };
      c = await f.kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(o) });
      assert.equal(c.code, 0, c.stderr);
    }
    proxy = await startProxy(f, { run: 'cli', resources: 'auto', args: ['--log-level', 'info'] });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
    await f?.kubectl(['delete', 'namespace', ns, '--wait=false']);
    await f?.kubectl(['delete', 'crd', `gizmos.${group}`, '--wait=false']);
  });

  test('kubectl get gizmos: upstream until the CRDs are cached, then from the cache, equal to direct', async () => {
    const resource = `gizmos.${group}`;
    // An informer's LIST (plain JSON) caches the gizmos.
    const json = await via(['get', resource, '-o', 'json']);
    assert.equal(json.code, 0, json.stderr);
    await eventually('gizmos cached', 30_000, async () =>
      (await entry('gizmos'))?.synced ? true : undefined,
    );
    assert.equal(await entry('customresourcedefinitions'), undefined, 'the CRDs not cached yet');

    // The first Table: passed upstream for want of the CRDs; answered 2xx, it starts them.
    for (const extra of [[], ['-o', 'wide']]) {
      const [want, got] = await Promise.all([
        direct(['get', resource, ...extra]),
        via(['get', resource, ...extra]),
      ]);
      assert.equal(got.code, 0, got.stderr);
      assert.deepEqual(printed(got.stdout), printed(want.stdout));
    }
    assert.ok(
      (await metric({ resource: 'gizmos', reason: 'table-printer' })) >= 1,
      'passed upstream as table-printer',
    );
    await eventually('the CRDs cached on demand', 30_000, async () => {
      const e = await entry('customresourcedefinitions');
      return e?.synced && e.origin === 'auto' ? true : undefined;
    });

    // The Table passed upstream showed the client the apiserver's resourceVersion, past the quiet
    // gizmos cache's: later reads go upstream (`behind-upstream`) until the cache passes it (its
    // next bookmark, ~1 min, or a write). A write now, so the wait is the test's own.
    const g3 = { apiVersion: `${group}/v1`, kind: 'Gizmo', metadata: { name: 'g3' }, spec: { size: 7 } };
    const c = await f.kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(g3) });
    assert.equal(c.code, 0, c.stderr);
    // Then printed by the cache: get, -o wide, --show-labels equal to direct.
    await eventually('a gizmos Table from the cache', 60_000, async () => {
      const before = await metric({ resource: 'gizmos', served_from: 'cache' });
      const [want, got] = await Promise.all([direct(['get', resource]), via(['get', resource])]);
      assert.equal(got.code, 0, got.stderr);
      assert.deepEqual(printed(got.stdout), printed(want.stdout));
      return (await metric({ resource: 'gizmos', served_from: 'cache' })) > before ? true : undefined;
    });
    const upstream = await metric({ resource: 'gizmos', served_from: 'upstream' });
    for (const extra of [[], ['-o', 'wide'], ['--show-labels']]) {
      const [want, got] = await Promise.all([
        direct(['get', resource, ...extra]),
        via(['get', resource, ...extra]),
      ]);
      assert.equal(got.code, 0, got.stderr);
      assert.deepEqual(printed(got.stdout), printed(want.stdout), `kubectl get ${extra.join(' ')}`);
    }
    assert.equal(
      await metric({ resource: 'gizmos', served_from: 'upstream' }),
      upstream,
      'nothing more upstream',
    );
  });
});
