/**
 * Issue 32, the kinds printed as a name, a field or two and an age (`src/printers/simple.ts`):
 * namespaces (one Active, one Terminating), configmaps, secrets, serviceaccounts,
 * endpointslices, leases, rolebindings, clusterrolebindings, poddisruptionbudgets,
 * networkpolicies, side by side with the fixture apiserver (`test/support/table-side-by-side.ts`);
 * a configmaps Table watch (`kubectl get -w` of every kind: the harness); a Table LIST does not
 * send the next plain LIST upstream.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { eventually } from '../support/eventually.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { KUBECTL, type TableKind, tableSuite, tableWatch } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [
  ['/api/v1/namespaces', 'namespaces'],
  ['ns:/api/v1/configmaps', 'configmaps'],
  ['ns:/api/v1/secrets', 'secrets'],
  ['ns:/api/v1/serviceaccounts', 'serviceaccounts'],
  ['ns:/apis/discovery.k8s.io/v1/endpointslices', 'endpointslices.discovery.k8s.io'],
  ['ns:/apis/coordination.k8s.io/v1/leases', 'leases.coordination.k8s.io'],
  ['ns:/apis/rbac.authorization.k8s.io/v1/rolebindings', 'rolebindings.rbac.authorization.k8s.io'],
  ['/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', 'clusterrolebindings.rbac.authorization.k8s.io'],
  ['ns:/apis/policy/v1/poddisruptionbudgets', 'poddisruptionbudgets.policy'],
  ['ns:/apis/networking.k8s.io/v1/networkpolicies', 'networkpolicies.networking.k8s.io'],
];

tableSuite('issue 32: Table answers of the simple printers equal the apiserver', KINDS, {
  async setup(s) {
    const { f, http, create, meta, ns, run } = s;
    const nsGone = await f.newNamespace('table-gone');
    const P = `/api/v1/namespaces/${ns}`;
    await create(`${P}/serviceaccounts`, { metadata: meta('default') });
    // Namespaces: one Active, one Terminating (nothing finalizes it in the fixture).
    for (const n of [ns, nsGone]) {
      const r = await http(f.server, `/api/v1/namespaces/${n}`, undefined, 'PATCH', {
        metadata: { labels: { t32: run } },
      });
      assert.equal(r.status, 200, r.body);
    }
    await create(`${P}/configmaps`, { metadata: meta('cm-gone') });
    assert.equal((await f.kubectl(['delete', 'namespace', nsGone, '--wait=false'])).code, 0);
    await http(f.server, `/api/v1/namespaces/${ns}/configmaps/cm-gone`, undefined, 'DELETE');
    await create(`${P}/configmaps`, {
      metadata: meta('cm-a'),
      data: { a: '1', b: '2' },
      binaryData: { c: 'AA==' },
    });
    await create(`${P}/configmaps`, { metadata: meta('cm-empty') });
    await create(`${P}/secrets`, { metadata: meta('sec-a'), type: 'Opaque', data: { a: 'AA==' } });
    await create(`${P}/secrets`, {
      metadata: meta('sec-tls'),
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': 'AA==', 'tls.key': 'AA==' },
    });
    await create(`${P}/serviceaccounts`, { metadata: meta('sa-a') });
    const selector = {
      matchLabels: { app: 'web' },
      matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['db', 'cache'] }],
    };
    await create(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
      metadata: meta('eps-a'),
      addressType: 'IPv4',
      ports: [{ port: 80 }, { name: 'https', port: 443 }, { name: 'named' }, { name: 'metrics', port: 9090 }],
      endpoints: [
        { addresses: ['10.0.0.1', '10.0.0.2'] },
        { addresses: ['10.0.0.3', '10.0.0.4', '10.0.0.5'] },
      ],
    });
    await create(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
      metadata: meta('eps-empty'),
      addressType: 'FQDN',
    });
    await create(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, {
      metadata: meta('lease-a'),
      spec: { holderIdentity: 'me_1' },
    });
    await create(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, {
      metadata: meta('lease-b'),
      spec: {},
    });
    const rbac = '/apis/rbac.authorization.k8s.io/v1';
    const subjects = [
      { kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'User', name: 'bob', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'Group', name: 'devs', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'ServiceAccount', name: 'sa-a', namespace: ns },
    ];
    await create(`${rbac}/namespaces/${ns}/rolebindings`, {
      metadata: meta('rb-a'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'role-a' },
      subjects,
    });
    await create(`${rbac}/clusterrolebindings`, {
      metadata: meta(`${run}-crb`),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${run}-cr` },
      subjects,
    });
    await create(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`, {
      metadata: meta('pdb-min'),
      spec: { minAvailable: 2, selector },
    });
    await create(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`, {
      metadata: meta('pdb-max'),
      spec: { maxUnavailable: '50%' },
    });
    await create(`/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`, {
      metadata: meta('np-a'),
      spec: { podSelector: selector },
    });
    await create(`/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`, {
      metadata: meta('np-all'),
      spec: { podSelector: {} },
    });
  },
  async cleanup(s) {
    await s.f.kubectl(['delete', 'clusterrolebinding', `${s.run}-crb`, '--wait=false']);
  },
  more(s) {
    test('a Table watch: the same events as the apiserver (columns in the first only)', async () => {
      const { f, create, meta, ns } = s;
      const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
      const d = await tableWatch(s, f.server, configmaps);
      const v = await tableWatch(s, s.proxy.url, configmaps);
      assert.ok(v.fromCache, 'watch from the cache');
      await eventually('initial events', 20_000, async () =>
        d.lines.length >= 2 && v.lines.length >= 2 ? true : undefined,
      );
      await create(`/api/v1/namespaces/${ns}/configmaps`, { metadata: meta('cm-new'), data: { x: 'y' } });
      await eventually('the new one', 20_000, async () =>
        d.lines.length >= 3 && v.lines.length >= 3 ? true : undefined,
      );
      await d.stop();
      await v.stop();
      assert.deepEqual(v.lines, d.lines);
      const first = d.lines[0] as { object: { columnDefinitions: unknown } };
      const second = d.lines[1] as { object: { columnDefinitions: unknown } };
      assert.ok(Array.isArray(first.object.columnDefinitions) && second.object.columnDefinitions === null);
    });

    test('a Table LIST from the cache does not send the next plain LIST upstream', async () => {
      const { via, ns, proxy } = s;
      const metric = async (labels: Record<string, string>) => {
        const r = await request(`${proxy.ops}/metrics`);
        return sum(parsePrometheus(await r.body.text()), 'kube_cache_proxy_requests_total', labels);
      };
      const list = `/api/v1/namespaces/${ns}/configmaps`;
      const before = await metric({ resource: 'configmaps', served_from: 'upstream' });
      for (let i = 0; i < 3; i++) {
        const t = await via(list, KUBECTL);
        assert.ok(t.fromCache, 'the Table from the cache');
        const plain = await via(list, 'application/json');
        assert.equal(plain.status, 200);
        assert.ok(plain.fromCache, 'the next plain LIST from the cache too');
      }
      assert.equal(
        await metric({ resource: 'configmaps', served_from: 'upstream' }),
        before,
        'nothing upstream',
      );
      assert.equal(await metric({ reason: 'behind-upstream' }), 0);
    });
  },
});
