/**
 * Issue 10, the differential matrix: every identity of the fixture (admin certificate, admin
 * token, `limited`, `none`, `reader`, node `system:node:n1`, no credential) × cached
 * LIST/GET/WATCH in its own namespace, another and cluster-wide, with and without label and field
 * selectors (`spec.nodeName=n1` among them), uncached reads and writes — sent directly to the
 * apiserver (`--authorization-mode=Node,RBAC`) and through a proxy in delegated mode over TLS. The
 * status code and the Status body through the proxy equal the direct answer for every cell, and
 * every allowed cached read is served from the cache. The one documented difference: without
 * `--impersonate-certificate-clients` an x509 client's uncached request is refused with a 403
 * naming that flag (its certificate cannot cross the hop); with the flag it equals direct: the
 * node n1 with the proxy's identity holding only deploy/'s constrained impersonation RBAC (a proxy
 * that may also use legacy impersonation: identity-impersonation-mode.test.ts), the admin
 * certificate (system:masters, which constrained impersonation always refuses — asserted as
 * that exact refusal) with a cluster-admin proxy identity (the authenticated-legacy overlay).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { constrainedProxyIdentity } from '../support/constrained-identity.ts';
import { eventually } from '../support/eventually.ts';
import { type Identity, IdentityClient, matrixIdentities } from '../support/identities.ts';
import {
  type Cell,
  type CellResult,
  describeMismatch,
  type MatrixScope,
  matrixCells,
  pool,
  sendBoth,
} from '../support/identity-matrix.ts';
import { applyMatrixObjects } from '../support/identity-setup.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const x509 = (id: Identity) => id.cert !== undefined;

describe('issue 10: identity matrix, delegated mode over TLS vs direct', () => {
  let f: Fixture;
  let client: IdentityClient;
  let scope: MatrixScope;
  let ids: Identity[];
  let cells: Cell[];
  let plain: InProcessProxy;
  let impersonating: InProcessProxy;
  let legacyImpersonating: InProcessProxy;
  let constrained: { kubeconfig: string; cleanup(): Promise<void> };
  const results = new Map<InProcessProxy, CellResult[]>();

  /** Every (identity, cell) through `p`, four at a time. */
  const runMatrix = async (p: InProcessProxy, which: (id: Identity, c: Cell) => boolean) => {
    const pairs = ids.flatMap((id) => cells.filter((c) => which(id, c)).map((c) => [id, c] as const));
    return pool(pairs, 4, ([id, c]) => sendBoth(client, { direct: f.server, proxy: p.url }, id, c));
  };

  before(async () => {
    f = await sharedFixture();
    client = new IdentityClient(f.caPem);
    scope = {
      own: f.limitedNamespace,
      other: await f.newNamespace('idm'),
      run: `r${Math.random().toString(36).slice(2, 8)}`,
    };
    await applyMatrixObjects(f, [scope.own, scope.other], scope.run);
    ids = matrixIdentities(f);
    cells = matrixCells(scope);
    const flags = { resources: 'configmaps,pods', delegatedAuth: true };
    plain = await startProxy(f, flags);
    // The impersonating proxy runs with the RBAC deploy/ ships (constrained impersonation), not cluster-admin.
    constrained = await constrainedProxyIdentity(f, `idm-proxy-${scope.run}`, {
      cached: ['configmaps', 'pods'],
      forwarded: ['configmaps', 'pods', 'secrets', 'serviceaccounts'],
    });
    impersonating = await startProxy(f, {
      ...flags,
      kubeconfig: constrained.kubeconfig,
      args: ['--impersonate-certificate-clients'],
    });
    // And one whose identity is cluster-admin (legacy `impersonate` allowed, as the
    // authenticated-legacy overlay grants): the only way a system:masters client can cross.
    legacyImpersonating = await startProxy(f, { ...flags, args: ['--impersonate-certificate-clients'] });
  });
  after(async () => {
    await plain?.stop();
    await impersonating?.stop();
    await legacyImpersonating?.stop();
    await constrained?.cleanup();
    await client?.close();
  });

  test('every identity × every cell answers as the apiserver (x509 uncached cells: see below)', async () => {
    const rs = await runMatrix(plain, (id, c) => !(x509(id) && !c.cached));
    results.set(plain, rs);
    const bad = rs.filter((r) => !isDeepStrictEqual(r.want, r.got)).map(describeMismatch);
    assert.deepEqual(bad, [], `${bad.length} of ${rs.length} cells differ:\n${bad.join('\n')}`);
    // The matrix is not vacuous: every identity has allowed and denied cells.
    for (const id of ids) {
      const mine = rs.filter((r) => r.identity === id).map((r) => r.direct.status);
      if (id.name !== 'anonymous' && id.name !== 'none')
        assert.ok(mine.includes(200), `${id.name}: no allowed cell`);
      if (id.name !== 'admin-cert' && id.name !== 'admin-token')
        assert.ok(mine.includes(403), `${id.name}: no denied cell: ${mine}`);
    }
  });

  test('every allowed cached read of an authenticated client is served from the cache', () => {
    const rs = results.get(plain);
    assert.ok(rs, 'the matrix ran');
    const upstream = rs
      .filter((r) => r.cell.cached && r.direct.status === 200 && r.identity.name !== 'anonymous')
      .filter((r) => !r.proxy.fromCache)
      .map((r) => `${r.identity.name} × ${r.cell.name}`);
    assert.deepEqual(upstream, []);
    // No credential in delegated mode: passed upstream without the proxy's credential, never cached.
    const anon = rs
      .filter((r) => r.identity.name === 'anonymous' && r.proxy.fromCache)
      .map((r) => r.cell.name);
    assert.deepEqual(anon, []);
  });

  test('x509 clients without --impersonate-certificate-clients: uncached cells get the 403 naming the flag', async () => {
    const rs = await runMatrix(plain, (id, c) => x509(id) && !c.cached);
    assert.ok(rs.length > 0);
    for (const r of rs) {
      const s = JSON.parse(r.proxy.body) as {
        kind: string;
        apiVersion: string;
        status: string;
        reason: string;
        code: number;
        message: string;
      };
      const where = describeMismatch(r);
      assert.equal(r.proxy.status, 403, where);
      assert.equal(s.kind, 'Status', where);
      assert.equal(s.apiVersion, 'v1', where);
      assert.equal(s.status, 'Failure', where);
      assert.equal(s.reason, 'Forbidden', where);
      assert.equal(s.code, 403, where);
      assert.match(s.message, /--impersonate-certificate-clients/, where);
      // Refused by the proxy itself: the apiserver never saw it.
      assert.equal(r.proxy.fromCache, true, where);
    }
  });

  /** Asserts every cell of `rs` equals direct; uncached ones went upstream, allowed cached ones did not. */
  const assertEqualDirect = (rs: CellResult[]) => {
    const bad = rs.filter((r) => !isDeepStrictEqual(r.want, r.got)).map(describeMismatch);
    assert.deepEqual(bad, [], `${bad.length} of ${rs.length} cells differ:\n${bad.join('\n')}`);
    for (const r of rs) {
      if (!r.cell.cached) assert.equal(r.proxy.fromCache, false, describeMismatch(r));
      else if (r.direct.status === 200) assert.equal(r.proxy.fromCache, true, describeMismatch(r));
    }
  };

  test("with the flag and deploy/'s constrained impersonation RBAC: the node n1's every cell answers as the apiserver", async () => {
    const rs = await runMatrix(impersonating, (id) => id.name === 'node-n1');
    assert.equal(rs.length, cells.length);
    assertEqualDirect(rs);
  });

  test('with the flag and constrained RBAC: system:masters is never impersonated (the apiserver refuses it), cached cells as direct', async () => {
    const rs = await runMatrix(impersonating, (id) => id.name === 'admin-cert');
    assertEqualDirect(rs.filter((r) => r.cell.cached));
    const sa = `system:serviceaccount:kcp-system:idm-proxy-${scope.run}`;
    for (const r of rs.filter((x) => !x.cell.cached)) {
      const where = describeMismatch(r);
      assert.equal(r.proxy.status, 403, where);
      assert.equal(r.proxy.fromCache, false, where);
      assert.deepEqual(JSON.parse(r.proxy.body), {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `groups.authentication.k8s.io "system:masters" is forbidden: User "${sa}" cannot impersonate:user-info resource "groups" in API group "authentication.k8s.io" at the cluster scope: impersonating the system:masters group is not allowed`,
        reason: 'Forbidden',
        details: { name: 'system:masters', group: 'authentication.k8s.io', kind: 'groups' },
        code: 403,
      });
    }
  });

  test('with the flag and a cluster-admin proxy identity (legacy impersonation): the admin certificate answers as the apiserver', async () => {
    const rs = await runMatrix(legacyImpersonating, (id) => id.name === 'admin-cert');
    assert.equal(rs.length, cells.length);
    assertEqualDirect(rs);
  });

  test("the node n1: 403 on /api/v1/pods with the Node authorizer's reason, 200 from the cache with spec.nodeName=n1", async () => {
    const n1 = ids.find((i) => i.name === 'node-n1')!;
    const all = await client.send(plain.url, n1, { path: '/api/v1/pods' });
    const direct = await client.send(f.server, n1, { path: '/api/v1/pods' });
    assert.equal(all.status, 403);
    assert.deepEqual(JSON.parse(all.body), JSON.parse(direct.body));
    const status = JSON.parse(all.body) as { message: string; details: { kind: string } };
    assert.equal(
      status.message,
      'pods is forbidden: User "system:node:n1" cannot list resource "pods" in API group "" at the cluster scope: ' +
        'node: can only list/watch pods with spec.nodeName field selector',
    );
    assert.equal(status.details.kind, 'pods');

    const served = async () =>
      sum(
        parsePrometheus(await (await fetch(`${plain.ops}/metrics`)).text()),
        'kube_cache_proxy_requests_total',
        {
          resource: 'pods',
          verb: 'LIST',
          served_from: 'cache',
          code: '200',
        },
      );
    const before = await served();
    const path = `/api/v1/pods?fieldSelector=${encodeURIComponent('spec.nodeName=n1')}&labelSelector=idm%3D${scope.run}`;
    const mine = await client.send(plain.url, n1, { path });
    assert.equal(mine.status, 200, mine.body);
    assert.equal(mine.fromCache, true);
    await eventually('the cache-served LIST counted', 10_000, async () =>
      (await served()) - before === 1 ? true : undefined,
    );
    const names = (
      JSON.parse(mine.body) as { items: { metadata: { namespace: string; name: string } }[] }
    ).items
      .map((p) => `${p.metadata.namespace}/${p.metadata.name}`)
      .sort();
    assert.deepEqual(names, [`${scope.other}/idm-pod-n1`, `${scope.own}/idm-pod-n1`].sort());
  });
});
