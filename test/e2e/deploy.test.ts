/**
 * The deploy/ kustomizations against a real apiserver: rendered with the fixture's kubectl
 * (`kubectl kustomize`), accepted by `kubectl apply --dry-run=server` (admission, validation and
 * defaulting all run), RBAC exactly list/watch on the sidecar's `--resources`, and — applied
 * for real — sufficient for those verbs and nothing else (checked with `kubectl auth can-i` as
 * the ServiceAccount).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { parseAllDocuments, stringify } from 'yaml';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { cacheRbacRules } from '../support/rbac-rules.ts';

const deployDir = fileURLToPath(new URL('../../deploy/', import.meta.url));

// biome-ignore lint/suspicious/noExplicitAny: rendered Kubernetes objects are checked field by field.
type Obj = any;

interface Rendered {
  namespace: string;
  prefix: string;
  yaml: string;
  objects: Obj[];
  byKind(kind: string): Obj;
  sidecar: Obj;
  resourcesArg: string;
}

describe('deploy/ manifests against the fixture apiserver', () => {
  let f: Fixture;
  const tmp = mkdtempSync(join(tmpdir(), 'kcp-deploy-'));
  const clusterScoped: string[] = [];

  before(async () => {
    f = await sharedFixture();
  });
  after(async () => {
    if (clusterScoped.length > 0) await f.kubectl(['delete', '--ignore-not-found', ...clusterScoped]);
    rmSync(tmp, { recursive: true, force: true });
  });

  /**
   * Renders `deploy/<dir>` wrapped in a kustomization that sets a fresh namespace and a name
   * prefix, the way a user consumes the base (ClusterRole names are cluster-wide).
   */
  async function render(dir: string): Promise<Rendered> {
    const namespace = await f.newNamespace('deploy');
    const prefix = `${namespace}-`;
    const wrap = mkdtempSync(join(tmp, 'wrap-'));
    writeFileSync(
      join(wrap, 'kustomization.yaml'),
      stringify({ namespace, namePrefix: prefix, resources: [relative(wrap, join(deployDir, dir))] }),
    );
    const r = await f.kubectl(['kustomize', wrap]);
    assert.equal(r.code, 0, r.stderr);
    const objects = parseAllDocuments(r.stdout).map((d) => d.toJS());
    const byKind = (kind: string) => {
      const found = objects.filter((o) => o.kind === kind);
      assert.equal(found.length, 1, `exactly one ${kind}`);
      return found[0];
    };
    const sidecar = byKind('Deployment').spec.template.spec.initContainers[0];
    const resourcesArg =
      (sidecar.args as string[]).find((a) => a.startsWith('--resources='))?.slice(12) ?? '';
    return { namespace, prefix, yaml: r.stdout, objects, byKind, sidecar, resourcesArg };
  }

  async function dryRun(m: Rendered, yaml = m.yaml) {
    return f.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: yaml });
  }

  /** `kubectl auth can-i VERB RESOURCE` as the rendered ServiceAccount: true for "yes". */
  async function canI(
    m: Rendered,
    verb: string,
    resource: string,
    namespace = m.namespace,
  ): Promise<boolean> {
    const sa = `system:serviceaccount:${m.namespace}:${m.prefix}controller`;
    const r = await f.kubectl(['auth', 'can-i', verb, resource, '-n', namespace, '--as', sa]);
    assert.ok(r.stdout.trim() === 'yes' || r.stdout.trim() === 'no', `can-i: ${r.stdout} ${r.stderr}`);
    return r.stdout.trim() === 'yes';
  }

  /** Verbs/resources the sidecar must have, and some it must not. */
  async function assertLeastPrivilege(m: Rendered, namespace: string) {
    for (const resource of ['configmaps', 'pods', 'deployments.apps']) {
      for (const verb of ['list', 'watch'])
        assert.equal(await canI(m, verb, resource, namespace), true, `${verb} ${resource}`);
      for (const verb of ['get', 'create', 'update', 'patch', 'delete']) {
        assert.equal(await canI(m, verb, resource, namespace), false, `${verb} ${resource} must be denied`);
      }
    }
    assert.equal(await canI(m, 'list', 'secrets', namespace), false, 'list secrets must be denied');
  }

  it('base: renders the native sidecar with list/watch ClusterRole exactly matching --resources', async () => {
    const m = await render('base');
    assert.deepEqual(m.objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
      `ClusterRole/${m.prefix}kube-cache-proxy`,
      `ClusterRoleBinding/${m.prefix}kube-cache-proxy`,
      `ConfigMap/${m.prefix}kube-cache-proxy-kubeconfig`,
      `Deployment/${m.prefix}controller`,
      `ServiceAccount/${m.prefix}controller`,
    ]);
    assert.equal(m.resourcesArg, 'configmaps,pods,deployments.apps');
    assert.deepEqual(m.byKind('ClusterRole').rules, cacheRbacRules(m.resourcesArg));
    assert.deepEqual(m.byKind('ClusterRoleBinding').subjects, [
      { kind: 'ServiceAccount', name: `${m.prefix}controller`, namespace: m.namespace },
    ]);
    assert.equal(m.sidecar.restartPolicy, 'Always');
    assert.equal(
      m.sidecar.args.some((a: string) => a.startsWith('--namespace')),
      false,
    );
  });

  it('base: passes server-side dry-run', async () => {
    const m = await render('base');
    const r = await dryRun(m);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n').sort(), [
      `clusterrole.rbac.authorization.k8s.io/${m.prefix}kube-cache-proxy created (server dry run)`,
      `clusterrolebinding.rbac.authorization.k8s.io/${m.prefix}kube-cache-proxy created (server dry run)`,
      `configmap/${m.prefix}kube-cache-proxy-kubeconfig created (server dry run)`,
      `deployment.apps/${m.prefix}controller created (server dry run)`,
      `serviceaccount/${m.prefix}controller created (server dry run)`,
    ]);
  });

  it('dry-run is real validation: an invalid sidecar is rejected', async () => {
    const m = await render('base');
    const r = await dryRun(m, m.yaml.replace('restartPolicy: Always', 'restartPolicy: Sometimes'));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /restartPolicy/);
  });

  it('base: the RBAC, applied, allows list/watch on the cached resources cluster-wide and nothing else', async () => {
    const m = await render('base');
    const rbac = m.objects.filter((o) =>
      ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind),
    );
    clusterScoped.push(
      `clusterrole/${m.prefix}kube-cache-proxy`,
      `clusterrolebinding/${m.prefix}kube-cache-proxy`,
    );
    const r = await f.kubectl(['apply', '-f', '-'], { input: rbac.map((o) => stringify(o)).join('---\n') });
    assert.equal(r.code, 0, r.stderr);
    await assertLeastPrivilege(m, m.namespace);
    assert.equal(await canI(m, 'list', 'pods', 'kube-system'), true, 'cluster-wide list');
  });

  it('namespaced overlay: Role instead of ClusterRole, --namespace, dry-run and applied RBAC', async () => {
    const m = await render('overlays/namespaced');
    assert.deepEqual(m.objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
      `ConfigMap/${m.prefix}kube-cache-proxy-kubeconfig`,
      `Deployment/${m.prefix}controller`,
      `Role/${m.prefix}kube-cache-proxy`,
      `RoleBinding/${m.prefix}kube-cache-proxy`,
      `ServiceAccount/${m.prefix}controller`,
    ]);
    assert.equal(m.byKind('Role').metadata.namespace, m.namespace);
    assert.deepEqual(m.byKind('Role').rules, cacheRbacRules(m.resourcesArg));
    assert.ok(m.sidecar.args.includes('--namespace=$(POD_NAMESPACE)'));

    const dry = await dryRun(m);
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(dry.stdout.trim().split('\n').sort(), [
      `configmap/${m.prefix}kube-cache-proxy-kubeconfig created (server dry run)`,
      `deployment.apps/${m.prefix}controller created (server dry run)`,
      `role.rbac.authorization.k8s.io/${m.prefix}kube-cache-proxy created (server dry run)`,
      `rolebinding.rbac.authorization.k8s.io/${m.prefix}kube-cache-proxy created (server dry run)`,
      `serviceaccount/${m.prefix}controller created (server dry run)`,
    ]);

    const rbac = m.objects.filter((o) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(o.kind));
    const r = await f.kubectl(['apply', '-f', '-'], { input: rbac.map((o) => stringify(o)).join('---\n') });
    assert.equal(r.code, 0, r.stderr);
    await assertLeastPrivilege(m, m.namespace);
    assert.equal(await canI(m, 'list', 'pods', 'kube-system'), false, 'no access outside its namespace');
  });

  /** The kinds/names every authenticated overlay renders (the base plus its RBAC and Service). */
  const authenticatedObjects = (prefix: string) => [
    `ClusterRole/${prefix}kube-cache-proxy`,
    `ClusterRole/${prefix}kube-cache-proxy-impersonate`,
    `ClusterRoleBinding/${prefix}kube-cache-proxy`,
    `ClusterRoleBinding/${prefix}kube-cache-proxy-auth-delegator`,
    `ClusterRoleBinding/${prefix}kube-cache-proxy-impersonate`,
    `ConfigMap/${prefix}kube-cache-proxy-kubeconfig`,
    `Deployment/${prefix}controller`,
    `Service/${prefix}kube-cache-proxy`,
    `ServiceAccount/${prefix}controller`,
  ];

  /** Applies the overlay's ServiceAccount and RBAC for real; returns a token of the ServiceAccount. */
  async function applyRbac(m: Rendered): Promise<string> {
    const rbac = m.objects.filter((o) =>
      ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind),
    );
    for (const o of rbac)
      if (o.kind !== 'ServiceAccount') clusterScoped.push(`${o.kind.toLowerCase()}/${o.metadata.name}`);
    const r = await f.kubectl(['apply', '-f', '-'], { input: rbac.map((o) => stringify(o)).join('---\n') });
    assert.equal(r.code, 0, r.stderr);
    const t = await f.kubectl(['create', 'token', `${m.prefix}controller`, '-n', m.namespace]);
    assert.equal(t.code, 0, t.stderr);
    return t.stdout.trim();
  }

  /** GET `path` on the apiserver with `token` and impersonation headers: code and Status message. */
  async function impersonating(token: string, path: string, headers: Record<string, string | string[]>) {
    const agent = new Agent({ connect: { ca: f.caPem } });
    try {
      const r = await request(`${f.server}${path}`, {
        dispatcher: agent,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...headers },
      });
      const body = (await r.body.json()) as { message?: string };
      return { code: r.statusCode, message: body.message ?? '' };
    } finally {
      await agent.close();
    }
  }

  it('authenticated overlay: TLS listener, --delegated-auth, auth-delegator, constrained impersonation; dry-run', async () => {
    const m = await render('overlays/authenticated');
    assert.deepEqual(
      m.objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(),
      authenticatedObjects(m.prefix),
    );
    for (const a of [
      '--listen=0.0.0.0:8443',
      '--tls-cert-file=/etc/kube-cache-proxy-tls/tls.crt',
      '--tls-private-key-file=/etc/kube-cache-proxy-tls/tls.key',
      '--client-ca-file=/etc/kube-cache-proxy-client-ca/client-ca.crt',
      '--delegated-auth',
      '--impersonate-certificate-clients',
    ])
      assert.ok(m.sidecar.args.includes(a), a);
    assert.equal(m.sidecar.args.includes('--listen=127.0.0.1:8001'), false);
    const delegator = m.objects.find((o) => o.metadata.name === `${m.prefix}kube-cache-proxy-auth-delegator`);
    assert.deepEqual(delegator.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'system:auth-delegator',
    });
    assert.match(m.byKind('ConfigMap').data.kubeconfig, /server: https:\/\/127\.0\.0\.1:8443/);
    const dry = await dryRun(m);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(dry.stdout.trim().split('\n').length, authenticatedObjects(m.prefix).length);
  });

  it('authenticated overlay, applied: reviews allowed; impersonation only of users/groups/nodes and only on the forwarded resources', async () => {
    const m = await render('overlays/authenticated');
    const token = await applyRbac(m);
    assert.equal(await canI(m, 'create', 'tokenreviews.authentication.k8s.io'), true);
    assert.equal(await canI(m, 'create', 'subjectaccessreviews.authorization.k8s.io'), true);
    assert.equal(await canI(m, 'impersonate', 'users'), false, 'no legacy impersonation');
    const cm = `/api/v1/namespaces/${m.namespace}/configmaps`;
    // Allowed to impersonate: the apiserver then answers as the impersonated user (who has no RBAC).
    const asUser = await impersonating(token, cm, {
      'impersonate-user': 'kcp-cert-user',
      'impersonate-group': 'devs',
    });
    assert.equal(asUser.code, 403);
    assert.match(
      asUser.message,
      /^configmaps is forbidden: User "kcp-cert-user" cannot list resource "configmaps"/,
    );
    const asNode = await impersonating(token, '/api/v1/pods', { 'impersonate-user': 'system:node:n1' });
    assert.match(asNode.message, /User "system:node:n1" cannot list resource "pods"/);
    // Outside the role: another resource, and system:masters.
    const secrets = await impersonating(token, `/api/v1/namespaces/${m.namespace}/secrets`, {
      'impersonate-user': 'kcp-cert-user',
    });
    assert.equal(secrets.code, 403);
    assert.doesNotMatch(secrets.message, /User "kcp-cert-user"/);
    assert.match(secrets.message, /impersonate/);
    const masters = await impersonating(token, cm, {
      'impersonate-user': 'kcp-cert-user',
      'impersonate-group': 'system:masters',
    });
    assert.equal(masters.code, 403);
    assert.match(masters.message, /system:masters/);
  });

  it('authenticated-legacy overlay: the legacy impersonate verb (cluster-admin-equivalent, documented); dry-run', async () => {
    const m = await render('overlays/authenticated-legacy');
    assert.deepEqual(
      m.objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(),
      authenticatedObjects(m.prefix),
    );
    const role = m.objects.find((o) => o.metadata.name === `${m.prefix}kube-cache-proxy-impersonate`);
    assert.deepEqual(role.rules, [
      { apiGroups: [''], resources: ['users', 'groups'], verbs: ['impersonate'] },
    ]);
    const dry = await dryRun(m);
    assert.equal(dry.code, 0, dry.stderr);
  });
});
