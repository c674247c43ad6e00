/**
 * The impersonation mode of an x509 client's pass-through request is decided per client: a
 * `system:masters` certificate's request (which only legacy impersonation can carry) never changes
 * what a node certificate's requests get afterwards. The apiserver remembers, per requestor, the
 * impersonation mode that last succeeded and tries it first (`filters/impersonation`
 * `impersonationModesTracker`); a node impersonated by `Impersonate-User` alone in legacy mode gets
 * no `system:nodes` group, so the Node authorizer refuses it.
 *
 * Two RBAC set-ups for the proxy's identity, each a fresh ServiceAccount (the apiserver's memory
 * is per requestor name, so nothing another test did can leak in): bound to `cluster-admin`
 * (constrained and legacy impersonation), and holding the authenticated-legacy overlay's rules
 * (legacy only). In each: node requests, then a `system:masters` request, then node requests
 * again (a node's GET and PATCH of its Node object and of its Lease in `kube-node-lease`), every
 * answer through the proxy equal to the same request sent directly with that certificate.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { type Fixture, sharedFixture, writeKubeconfig } from '../fixture/index.ts';
import { type Answer, type Identity, IdentityClient, type Req } from '../support/identities.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const deploy = fileURLToPath(new URL('../../deploy/', import.meta.url));

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** The rules the authenticated-legacy overlay puts in the impersonation ClusterRole. */
function legacyOverlayRules(): Rule[] {
  const k = parse(readFileSync(join(deploy, 'overlays/authenticated-legacy/kustomization.yaml'), 'utf8')) as {
    patches: { patch: string }[];
  };
  const ops = k.patches.flatMap((p) => parse(p.patch) as { op: string; path: string; value: unknown }[]);
  const rules = ops.find((o) => o.op === 'replace' && o.path === '/rules')?.value as Rule[] | undefined;
  assert.ok(rules && rules.length > 0, 'the overlay replaces the rules');
  return rules;
}

/**
 * A ServiceAccount `name` in `kcp-system` for the proxy: list/watch of configmaps (the cached
 * resource), `system:auth-delegator`, and either `cluster-admin` or the given impersonation rules.
 */
async function proxyIdentity(
  f: Fixture,
  name: string,
  impersonation: 'cluster-admin' | Rule[],
): Promise<{ kubeconfig: string; cleanup(): Promise<void> }> {
  const crb = (suffix: string, role: string) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `${name}-${suffix}` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ kind: 'ServiceAccount', name, namespace: 'kcp-system' }],
  });
  const role = (suffix: string, rules: Rule[]) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: `${name}-${suffix}` },
    rules,
  });
  const items: unknown[] = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: 'kcp-system' } },
    role('cache', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] }]),
    crb('cache', `${name}-cache`),
    crb('auth-delegator', 'system:auth-delegator'),
    ...(impersonation === 'cluster-admin'
      ? [crb('admin', 'cluster-admin')]
      : [role('impersonate', impersonation), crb('impersonate', `${name}-impersonate`)]),
  ];
  const list = JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
  const r = await f.kubectl(['apply', '-f', '-'], { input: list });
  if (r.code !== 0) throw new Error(`proxy identity: ${r.stderr}`);
  const t = await f.kubectl(['create', 'token', name, '-n', 'kcp-system', '--duration=2h']);
  if (t.code !== 0) throw new Error(`proxy identity token: ${t.stderr}`);
  const kubeconfig = await writeKubeconfig(join(f.dir, `${name}.kubeconfig`), {
    server: f.server,
    caFile: f.caFile,
    user: { token: t.stdout.trim() },
  });
  return {
    kubeconfig,
    async cleanup() {
      await f.kubectl(['delete', '-f', '-', '--ignore-not-found'], { input: list });
    },
  };
}

/** What is compared: the status, and the body without what changes from one write to the next. */
function comparable(a: Answer): { status: number; body: unknown } {
  let body: unknown = a.body;
  try {
    body = JSON.parse(a.body);
  } catch {
    return { status: a.status, body };
  }
  const o = body as { kind?: string; metadata?: Record<string, unknown> };
  if (o.kind !== 'Status' && o.metadata) {
    delete o.metadata.resourceVersion;
    delete o.metadata.managedFields;
  }
  return { status: a.status, body: o };
}

describe('impersonation mode per client: a system:masters request never changes a node certificate answer', () => {
  let f: Fixture;
  let client: IdentityClient;
  let admin: Identity;
  let nodes: Identity[];
  const run = `m${Math.random().toString(36).slice(2, 8)}`;

  /** A node's own requests: GET and PATCH of its Node (status) and of its Lease. */
  const nodeRequests = (node: string, step: string): Req[] => [
    { path: `/api/v1/nodes/${node}` },
    {
      method: 'PATCH',
      path: `/api/v1/nodes/${node}/status`,
      headers: { 'content-type': 'application/merge-patch+json' },
      body: { metadata: { annotations: { [`kcp.test/${run}`]: step } } },
    },
    { path: `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}` },
    {
      method: 'PATCH',
      path: `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}`,
      headers: { 'content-type': 'application/merge-patch+json' },
      body: { spec: { holderIdentity: node, leaseDurationSeconds: 40 } },
    },
  ];

  /** Every request as `id`, through `p` and directly, in turn; the mismatches, described. */
  const compare = async (p: InProcessProxy, id: Identity, reqs: Req[]): Promise<string[]> => {
    const bad: string[] = [];
    for (const r of reqs) {
      const direct = comparable(await client.send(f.server, id, r));
      const via = comparable(await client.send(p.url, id, r));
      try {
        assert.deepEqual(via, direct);
      } catch {
        bad.push(
          `${id.user} ${r.method ?? 'GET'} ${r.path}: direct ${direct.status}, proxy ${via.status} ${JSON.stringify(via.body).slice(0, 400)}`,
        );
      }
    }
    return bad;
  };

  before(async () => {
    f = await sharedFixture();
    client = new IdentityClient(f.caPem);
    const pem = (p: { cert: string; key: string }) => ({
      cert: readFileSync(p.cert),
      key: readFileSync(p.key),
    });
    admin = { name: 'admin-cert', user: 'kcp-admin', cert: pem(f.adminCert) };
    nodes = [
      { name: 'node-n1', user: 'system:node:n1', cert: pem(f.nodeCerts.n1) },
      { name: 'node-n2', user: 'system:node:n2', cert: pem(f.nodeCerts.n2) },
    ];
    const items = ['n1', 'n2'].flatMap((n) => [
      { apiVersion: 'v1', kind: 'Node', metadata: { name: n } },
      {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: n, namespace: 'kube-node-lease' },
        spec: { holderIdentity: n, leaseDurationSeconds: 40 },
      },
    ]);
    const r = await f.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
    });
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await client?.close();
  });

  for (const setUp of ['cluster-admin', 'authenticated-legacy overlay'] as const) {
    test(`proxy identity ${setUp}: node answers equal direct before and after a system:masters pass-through`, async () => {
      const id = await proxyIdentity(
        f,
        `kcp-imp-${setUp === 'cluster-admin' ? 'admin' : 'legacy'}-${run}`,
        setUp === 'cluster-admin' ? 'cluster-admin' : legacyOverlayRules(),
      );
      const p = await startProxy(f, {
        resources: 'configmaps',
        delegatedAuth: true,
        kubeconfig: id.kubeconfig,
        args: ['--impersonate-certificate-clients'],
      });
      try {
        const bad: string[] = [];
        for (const n of nodes)
          bad.push(...(await compare(p, n, nodeRequests(n.user.split(':')[2]!, 'before'))));
        // The system:masters certificate's pass-through (uncached) requests: only legacy
        // impersonation can carry the group, so the apiserver now tries legacy first for the proxy.
        const masters = await compare(p, admin, [
          { path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases' },
          { path: '/api/v1/nodes/n1' },
        ]);
        bad.push(...masters);
        for (const n of nodes)
          bad.push(...(await compare(p, n, nodeRequests(n.user.split(':')[2]!, 'after'))));
        assert.deepEqual(bad, [], `${bad.length} answers differ:\n${bad.join('\n')}`);
        // Not vacuous: the nodes' own requests are allowed directly.
        const direct = await client.send(f.server, nodes[0]!, nodeRequests('n1', 'check')[1]!);
        assert.equal(direct.status, 200, direct.body);
      } finally {
        await p.stop();
        await id.cleanup();
      }
    });
  }
});
