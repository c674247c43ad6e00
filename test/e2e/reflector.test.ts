/**
 * The Reflector against the shared real kube-apiserver: a 5,000-object watch-list sync equals a
 * direct LIST, the same stream keeps delivering live events, and a CRD created at runtime is
 * picked up by the discovery retry.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { directList, MapSink, seedConfigMaps } from '../../bench/support/sync-support.ts';
import { HttpListerWatcher } from '../../src/reflector/list-watch.ts';
import { Reflector } from '../../src/reflector/reflector.ts';
import { ResourceSet } from '../../src/resources/resource-set.ts';
import { createUpstream, type Upstream } from '../../src/upstream/connection.ts';
import { discoverResource } from '../../src/upstream/discovery.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';

describe('reflector against the real apiserver', () => {
  let f: Fixture;
  let up: Upstream;

  before(async () => {
    f = await sharedFixture();
    // Admin by client certificate: exercises CA + client cert/key from the kubeconfig.
    up = await createUpstream({ kubeconfig: f.kubeconfigs.admin });
  });
  after(async () => {
    await up.close();
  });

  test('syncs 5,000 ConfigMaps via watch-list: keys and RVs equal a direct LIST; live events follow on the same stream', async () => {
    const ns = await f.newNamespace('refl-wl');
    await seedConfigMaps(up, ns, 5000, { bytes: 1024 });
    const info = await discoverResource(up, 'configmaps');
    assert.equal(info.builtIn, true);
    const sink = new MapSink();
    const watches: string[] = [];
    const base = new HttpListerWatcher(up, info, ns);
    const lw = {
      list: base.list.bind(base),
      watch: (o: Parameters<typeof base.watch>[0], s?: AbortSignal) => {
        watches.push(o.sendInitialEvents ? `watch-list@${o.resourceVersion}` : `watch@${o.resourceVersion}`);
        return base.watch(o, s);
      },
    };
    const r = new Reflector({ info, lw, sink });
    const done = r.run();
    try {
      await sink.waitFor(() => sink.replaces === 1, 60_000, 'initial sync');
      const st = r.status();
      assert.equal(st.lastSyncMode, 'watch-list');
      assert.equal(st.lastSyncObjects, 5000);
      assert.equal(st.watchListFallbacks, 0);
      const direct = await directList(up, `/api/v1/namespaces/${ns}/configmaps`);
      assert.equal(direct.versions.size, 5000);
      assert.deepEqual(sink.versions(), direct.versions);
      // Bytes are the apiserver's own, with kind/apiVersion as on GET.
      const one = sink.objects.get(`${ns}/cm-000042`)!;
      assert.match(
        one.raw.toString(),
        /^\{"kind":"ConfigMap","apiVersion":"v1","metadata":\{"name":"cm-000042"/,
      );

      const upd = await f.kubectl(['-n', ns, 'label', 'configmap', 'cm-000001', 'changed=yes']);
      assert.equal(upd.code, 0, upd.stderr);
      const del = await f.kubectl(['-n', ns, 'delete', 'configmap', 'cm-000002']);
      assert.equal(del.code, 0, del.stderr);
      await sink.waitFor(() => !sink.objects.has(`${ns}/cm-000002`), 20_000, 'delete event');
      const after = await directList(up, `/api/v1/namespaces/${ns}/configmaps`);
      await sink.waitFor(
        () => sameVersions(sink.versions(), after.versions),
        20_000,
        'cache equal to the direct LIST',
      );
      assert.deepEqual(sink.versions(), after.versions);
      assert.equal(sink.objects.get(`${ns}/cm-000001`)?.object.metadata.labels?.changed, 'yes');
      assert.deepEqual(
        watches,
        ['watch-list@'],
        'one request: the watch-list stream carried the live events',
      );
      assert.equal(sink.live, true);
    } finally {
      r.stop();
      await done;
    }
  });

  test('a CRD created after start is discovered (retried with backoff) and cached', async () => {
    const group = `g${Math.random().toString(36).slice(2, 8)}.example.com`;
    const name = `widgets.${group}`;
    const set = new ResourceSet({
      upstream: up,
      resources: [name, 'namespaces'],
      sinkFor: (info) => (info.kind === 'Widget' ? widgets : namespaces),
    });
    const widgets = new MapSink();
    const namespaces = new MapSink();
    set.start();
    try {
      // The other resource is not held up by the missing one.
      await namespaces.waitFor(() => namespaces.replaces === 1, 30_000, 'namespaces synced');
      const s0 = set.entries().find((s) => s.name === name)!;
      assert.equal(s0.phase, 'discovering');
      assert.match(
        s0.discoveryError ?? '',
        new RegExp(`resource "${name.replace(/\./g, '\\.')}": API group "${group}" is not served upstream`),
      );
      const crd = {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
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
      const c = await f.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) });
      assert.equal(c.code, 0, c.stderr);
      const ns = await f.newNamespace('refl-crd');
      await widgets.waitFor(() => widgets.replaces >= 1, 60_000, 'widgets synced');
      const w = await f.kubectl(['apply', '-n', ns, '-f', '-'], {
        input: JSON.stringify({
          apiVersion: `${group}/v1`,
          kind: 'Widget',
          metadata: { name: 'w1' },
          spec: { size: 3 },
        }),
      });
      assert.equal(w.code, 0, w.stderr);
      await widgets.waitFor(() => widgets.objects.has(`${ns}/w1`), 20_000, 'widget event');
      const st = set.entries().find((s) => s.name === name)!;
      assert.equal(st.phase, 'running');
      assert.equal(st.info?.builtIn, false);
      assert.equal(st.info?.apiVersion, `${group}/v1`);
      assert.equal(widgets.objects.get(`${ns}/w1`)?.object.kind, 'Widget');
    } finally {
      await set.close();
      await f.kubectl(['delete', 'crd', name, '--wait=false']);
    }
  });
});

function sameVersions(a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}
