/**
 * The deploy/ kustomizations against a real apiserver: rendered with the fixture's kubectl
 * (`kubectl kustomize`), accepted by `kubectl apply --dry-run=server` (admission, validation and
 * defaulting all run), RBAC exactly list/watch on the sidecar's `--resources`, and — applied
 * for real — sufficient for those verbs and nothing else (checked with `kubectl auth can-i` as
 * the ServiceAccount).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { mintCa, signCertificate } from '../fixture/certs.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { spawnProxyCli } from '../support/proxy.ts';
import { cacheRbacRules, SNAPSHOT_IDENTITY_RULE } from '../support/rbac-rules.ts';

const deployDir = fileURLToPath(new URL('../../deploy/', import.meta.url));

// biome-ignore lint/suspicious/noExplicitAny: rendered Kubernetes objects are checked field by field.
type Obj = any;

interface Rendered {
  namespace: string;
  prefix: string;
  yaml: string;
  objects: Obj[];
  byKind(kind: string): Obj;
  /** The kube-cache-proxy container: the controller Deployment's native sidecar, or the DaemonSet's or the pool's container. */
  sidecar: Obj;
  resourcesArg: string;
}

/**
 * A serving CA and certificate the way an operator (or cert-manager) makes them, distinct from the
 * cluster's CA: files `ca.crt`, `tls.crt` (SAN IP:127.0.0.1, DNS:localhost), `tls.key` in `dir`.
 */
async function mintServingCert(dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const ca = await mintCa(dir, 'ca', '/CN=node-local-ca', 1);
  const tls = await signCertificate(dir, {
    name: 'tls',
    subject: '/CN=kube-cache-proxy-node-local',
    ca,
    usage: 'server',
    days: 1,
  });
  assert.equal(tls.cert, join(dir, 'tls.crt'));
}

/** Expands `$(VAR)` the way the kubelet expands container args (`$$` is a literal `$`). */
function kubeletExpand(arg: string, env: Record<string, string>): string {
  return arg.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v: string | undefined) =>
    v === undefined ? '$' : (env[v] ?? m),
  );
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
    const workload = objects.find((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet');
    const podSpec = workload.spec.template.spec;
    // The controller Deployment's native sidecar, or the DaemonSet's or the pool Deployment's container.
    // (the node-local DaemonSet's first init container prepares the snapshot directory)
    const sidecar =
      podSpec.initContainers?.find((c: Obj) => c.name === 'kube-cache-proxy') ??
      podSpec.containers.find((c: Obj) => c.name === 'kube-cache-proxy');
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
    serviceAccount = `${m.prefix}controller`,
  ): Promise<boolean> {
    const sa = `system:serviceaccount:${m.namespace}:${serviceAccount}`;
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
  async function applyRbac(m: Rendered, serviceAccount = `${m.prefix}controller`): Promise<string> {
    const rbac = m.objects.filter((o) =>
      ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind),
    );
    for (const o of rbac)
      if (o.kind !== 'ServiceAccount') clusterScoped.push(`${o.kind.toLowerCase()}/${o.metadata.name}`);
    const r = await f.kubectl(['apply', '-f', '-'], { input: rbac.map((o) => stringify(o)).join('---\n') });
    assert.equal(r.code, 0, r.stderr);
    const t = await f.kubectl(['create', 'token', serviceAccount, '-n', m.namespace]);
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

  /** The kinds/names the node-local overlay renders. */
  const nodeLocalObjects = (prefix: string) => [
    `ClusterRole/${prefix}kube-cache-proxy-node-local`,
    `ClusterRoleBinding/${prefix}kube-cache-proxy-node-local`,
    `ClusterRoleBinding/${prefix}kube-cache-proxy-node-local-auth-delegator`,
    `ConfigMap/${prefix}kube-cache-proxy-node-local-kubeconfig`,
    `DaemonSet/${prefix}kube-cache-proxy-node-local`,
    `ServiceAccount/${prefix}kube-cache-proxy-node-local`,
  ];

  /** The operator's Secret, made with the command deploy/README.md gives. */
  async function tlsSecret(namespace: string, dir: string, keys = ['tls.crt', 'tls.key', 'ca.crt']) {
    return f.kubectl([
      'create',
      'secret',
      'generic',
      'kube-cache-proxy-node-local-tls',
      '--type=kubernetes.io/tls',
      '-n',
      namespace,
      ...keys.map((k) => `--from-file=${k}=${join(dir, k)}`),
      '--dry-run=client',
      '-o',
      'yaml',
    ]);
  }

  it('node-local overlay: renders the DaemonSet, RBAC exactly list/watch on the scoped --resources, no impersonation', async () => {
    const m = await render('overlays/node-local');
    assert.deepEqual(m.objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(), nodeLocalObjects(m.prefix));
    const ds = m.byKind('DaemonSet');
    assert.equal(ds.spec.template.spec.hostNetwork, true);
    assert.equal(ds.spec.template.spec.serviceAccountName, `${m.prefix}kube-cache-proxy-node-local`);
    // The Secret is the operator's: its name is not prefixed.
    assert.equal(ds.spec.template.spec.volumes[0].secret.secretName, 'kube-cache-proxy-node-local-tls');
    assert.equal(
      m.resourcesArg,
      'pods[fieldSelector=spec.nodeName=$(NODE_NAME)],nodes[fieldSelector=metadata.name=$(NODE_NAME)],services,endpointslices.discovery.k8s.io',
    );
    assert.deepEqual(m.byKind('ClusterRole').rules, [
      { apiGroups: [''], resources: ['nodes', 'pods', 'services'], verbs: ['list', 'watch'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      // --snapshot-dir: the kube-system namespace's UID (the snapshot's apiserver identity).
      { apiGroups: [''], resources: ['namespaces'], resourceNames: ['kube-system'], verbs: ['get'] },
    ]);
    assert.deepEqual(m.byKind('ClusterRole').rules, [
      ...cacheRbacRules(m.resourcesArg),
      SNAPSHOT_IDENTITY_RULE,
    ]);
    const delegator = m.objects.find(
      (o) => o.metadata.name === `${m.prefix}kube-cache-proxy-node-local-auth-delegator`,
    );
    assert.equal(delegator.roleRef.name, 'system:auth-delegator');
    for (const b of m.objects.filter((o) => o.kind === 'ClusterRoleBinding'))
      assert.deepEqual(b.subjects, [
        { kind: 'ServiceAccount', name: `${m.prefix}kube-cache-proxy-node-local`, namespace: m.namespace },
      ]);
    assert.doesNotMatch(m.yaml, /impersonat/);
  });

  it("node-local overlay: server-side dry-run clean with the operator's kubernetes.io/tls Secret; a Secret without tls.key is refused", async () => {
    const m = await render('overlays/node-local');
    const certs = join(mkdtempSync(join(tmp, 'certs-')), 'tls');
    await mintServingCert(certs);
    const secret = await tlsSecret(m.namespace, certs);
    assert.equal(secret.code, 0, secret.stderr);
    const dry = await dryRun(m, `${m.yaml}---\n${secret.stdout}`);
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(dry.stdout.trim().split('\n').sort(), [
      `clusterrole.rbac.authorization.k8s.io/${m.prefix}kube-cache-proxy-node-local created (server dry run)`,
      `clusterrolebinding.rbac.authorization.k8s.io/${m.prefix}kube-cache-proxy-node-local created (server dry run)`,
      `clusterrolebinding.rbac.authorization.k8s.io/${m.prefix}kube-cache-proxy-node-local-auth-delegator created (server dry run)`,
      `configmap/${m.prefix}kube-cache-proxy-node-local-kubeconfig created (server dry run)`,
      `daemonset.apps/${m.prefix}kube-cache-proxy-node-local created (server dry run)`,
      'secret/kube-cache-proxy-node-local-tls created (server dry run)',
      `serviceaccount/${m.prefix}kube-cache-proxy-node-local created (server dry run)`,
    ]);
    const broken = await tlsSecret(m.namespace, certs, ['tls.crt', 'ca.crt']);
    const refused = await dryRun(m, broken.stdout);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /tls\.key/);
  });

  it('node-local overlay, applied: list/watch of the cached resources, the review APIs, nothing else', async () => {
    const m = await render('overlays/node-local');
    await applyRbac(m, `${m.prefix}kube-cache-proxy-node-local`);
    const sa = `${m.prefix}kube-cache-proxy-node-local`;
    for (const resource of ['pods', 'nodes', 'services', 'endpointslices.discovery.k8s.io']) {
      for (const verb of ['list', 'watch'])
        assert.equal(await canI(m, verb, resource, 'kube-system', sa), true, `${verb} ${resource}`);
      for (const verb of ['get', 'create', 'update', 'delete'])
        assert.equal(
          await canI(m, verb, resource, 'kube-system', sa),
          false,
          `${verb} ${resource} must be denied`,
        );
    }
    assert.equal(await canI(m, 'create', 'tokenreviews.authentication.k8s.io', m.namespace, sa), true);
    assert.equal(await canI(m, 'create', 'subjectaccessreviews.authorization.k8s.io', m.namespace, sa), true);
    assert.equal(await canI(m, 'list', 'secrets', 'kube-system', sa), false);
    assert.equal(await canI(m, 'list', 'configmaps', 'kube-system', sa), false);
    assert.equal(await canI(m, 'impersonate', 'users', m.namespace, sa), false);
    assert.equal(
      await canI(m, 'impersonate:arbitrary-node', 'nodes.authentication.k8s.io', m.namespace, sa),
      false,
    );
  });

  it("node-local overlay, run: the DaemonSet's own args sync with only its RBAC; an agent with the ConfigMap's kubeconfig reads through it over TLS", async () => {
    const m = await render('overlays/node-local');
    const sa = `${m.prefix}kube-cache-proxy-node-local`;
    const proxyToken = await applyRbac(m, sa);
    // The node: a plain Node object and a pod bound to it, and one pod on another node.
    const node = `${m.namespace}-node`;
    clusterScoped.push(`node/${node}`);
    const pod = (name: string, nodeName: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: m.namespace },
      spec: { nodeName, containers: [{ name: 'c', image: 'registry.invalid/none' }] },
    });
    const objs = [
      { apiVersion: 'v1', kind: 'Node', metadata: { name: node } },
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'agent', namespace: m.namespace } },
      // No controller-manager in the fixture: the pods' ServiceAccount must be created.
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: m.namespace } },
      pod('on-this-node', node),
      pod('elsewhere', `${node}-other`),
    ];
    const created = await f.kubectl(['apply', '-f', '-'], {
      input: objs.map((o) => stringify(o)).join('---\n'),
    });
    assert.equal(created.code, 0, created.stderr);
    // The agent: its own ServiceAccount, allowed to read what a kube-proxy-like agent reads.
    clusterScoped.push(`clusterrole/${m.prefix}agent`, `clusterrolebinding/${m.prefix}agent`);
    for (const args of [
      [
        'clusterrole',
        `${m.prefix}agent`,
        '--verb=get,list,watch',
        '--resource=pods,nodes,services,endpointslices.discovery.k8s.io',
      ],
      [
        'clusterrolebinding',
        `${m.prefix}agent`,
        `--clusterrole=${m.prefix}agent`,
        `--serviceaccount=${m.namespace}:agent`,
      ],
    ]) {
      const r = await f.kubectl(['create', ...args]);
      assert.equal(r.code, 0, r.stderr);
    }
    const agentToken = await f.kubectl(['create', 'token', 'agent', '-n', m.namespace]);
    assert.equal(agentToken.code, 0, agentToken.stderr);

    // The pod's files: the Secret's keys at the mount path, the proxy's ServiceAccount token.
    const root = mkdtempSync(join(tmp, 'node-'));
    const tlsDir = join(root, 'etc/kube-cache-proxy-tls');
    await mintServingCert(tlsDir);
    const proxyKubeconfig = join(root, 'proxy.kubeconfig');
    writeFileSync(
      proxyKubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: f.server, 'certificate-authority': f.caFile } }],
        users: [{ name: 'u', user: { token: proxyToken } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    // The container's args as the kubelet passes them. Changed for the test only: the files'
    // root, ephemeral ports (tests run in parallel), the upstream (in-cluster in a pod).
    const env = { NODE_NAME: node, HOST_IP: '127.0.0.1', POD_IP: '127.0.0.1' };
    const args = (m.sidecar.args as string[])
      .map((a) => kubeletExpand(a, env))
      .map((a) => a.replaceAll('/etc/kube-cache-proxy-tls/', `${tlsDir}/`))
      .map((a) => (a.startsWith('--listen=') ? '--listen=127.0.0.1:0' : a))
      .map((a) => (a.startsWith('--ops-listen=') ? '--ops-listen=127.0.0.1:0' : a));
    assert.ok(
      args.includes(
        `--resources=pods[fieldSelector=spec.nodeName=${node}],nodes[fieldSelector=metadata.name=${node}],services,endpointslices.discovery.k8s.io`,
      ),
    );
    const proxy = spawnProxyCli([...args, `--kubeconfig=${proxyKubeconfig}`], env);
    try {
      const { address, ops } = await proxy.listening();
      assert.match(address, /^https:\/\/127\.0\.0\.1:\d+$/);
      // Ready = every resource synced: list and watch suffice with exactly this ClusterRole.
      await eventually("the node proxy's /readyz 200 (every resource synced)", 30_000, async () => {
        const r = await request(`${ops}/readyz`);
        await r.body.dump();
        return r.statusCode === 200 ? true : undefined;
      });

      // The agent's side: the ConfigMap mounted as a directory, the CA filled in from the
      // Secret's ca.crt, its own token at the projected path (here: a file).
      const agentDir = join(root, 'agent-kubeconfig');
      mkdirSync(agentDir);
      const cm = m.byKind('ConfigMap');
      const kc = parse(cm.data.kubeconfig);
      const port = new URL(address).port;
      assert.equal(kc.clusters[0].cluster.server, 'https://127.0.0.1:6446');
      kc.clusters[0].cluster.server = `https://127.0.0.1:${port}`;
      const tokenFile = join(root, 'agent-token');
      writeFileSync(tokenFile, agentToken.stdout.trim());
      kc.users[0].user.tokenFile = tokenFile;
      writeFileSync(join(agentDir, 'kubeconfig'), stringify(kc));
      writeFileSync(join(agentDir, 'ca.crt'), readFileSync(join(tlsDir, 'ca.crt')));
      const agentKc = join(agentDir, 'kubeconfig');
      const directKc = join(root, 'agent-direct.kubeconfig');
      writeFileSync(
        directKc,
        stringify({
          ...kc,
          clusters: [
            { name: kc.clusters[0].name, cluster: { server: f.server, 'certificate-authority': f.caFile } },
          ],
        }),
      );

      const reads = [
        ['get', 'pods', '-A', `--field-selector=spec.nodeName=${node}`, '-o', 'name'],
        ['get', 'services', '-A', '-o', 'name'],
        ['get', 'endpointslices.discovery.k8s.io', '-A', '-o', 'name'],
        ['get', 'nodes', `--field-selector=metadata.name=${node}`, '-o', 'name'],
      ];
      for (const r of reads) {
        const via = await f.kubectl(r, { kubeconfig: agentKc });
        const direct = await f.kubectl(r, { kubeconfig: directKc });
        assert.equal(via.code, 0, `${r.join(' ')}: ${via.stderr}`);
        assert.equal(via.stdout, direct.stdout, r.join(' '));
      }
      const onNode = await f.kubectl(reads[0]!, { kubeconfig: agentKc });
      assert.equal(onNode.stdout, `pod/on-this-node\n`);
      // Served from the cache, for the agent's identity (TokenReview + SubjectAccessReview).
      const metrics = await (await request(`${ops}/metrics`)).body.text();
      for (const resource of ['pods', 'services', 'endpointslices', 'nodes']) {
        const line = metrics
          .split('\n')
          .find(
            (l) =>
              l.startsWith('kube_cache_proxy_requests_total{') &&
              l.includes(`resource="${resource}"`) &&
              l.includes('verb="LIST"') &&
              l.includes('served_from="cache"') &&
              l.includes('code="200"'),
          );
        const seen = metrics
          .split('\n')
          .filter(
            (l) => l.startsWith('kube_cache_proxy_requests_total{') && l.includes(`resource="${resource}"`),
          );
        assert.ok(
          line && Number(line.split(' ').pop()) >= 1,
          `${resource} LIST served from cache: ${seen.join('\n')}`,
        );
      }
      // The TLS is the Secret's: the cluster's CA does not verify it.
      const wrongCa = join(root, 'wrong-ca.kubeconfig');
      writeFileSync(
        wrongCa,
        stringify({
          ...kc,
          clusters: [
            {
              name: kc.clusters[0].name,
              cluster: { server: kc.clusters[0].cluster.server, 'certificate-authority': f.caFile },
            },
          ],
        }),
      );
      const refused = await f.kubectl(['get', 'services', '-A'], { kubeconfig: wrongCa });
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /certificate signed by unknown authority/);
    } finally {
      await proxy.stop();
    }
  });

  it('pool overlay: TLS Deployment and Service, RBAC exactly list/watch on its --resources plus the review APIs; dry-run and applied', async () => {
    const m = await render('overlays/pool');
    const name = `${m.prefix}kube-cache-proxy-pool`;
    assert.deepEqual(m.objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
      `ClusterRole/${name}`,
      `ClusterRoleBinding/${name}`,
      `ClusterRoleBinding/${name}-auth-delegator`,
      `Deployment/${name}`,
      `Service/${name}`,
      `ServiceAccount/${name}`,
    ]);
    const deployment = m.byKind('Deployment');
    const proxy = deployment.spec.template.spec.containers[0];
    const resourcesArg = (proxy.args as string[]).find((a) => a.startsWith('--resources='))!.slice(12);
    assert.equal(resourcesArg, 'pods,nodes,services,endpointslices.discovery.k8s.io');
    assert.deepEqual(m.byKind('ClusterRole').rules, cacheRbacRules(resourcesArg));
    assert.equal(deployment.spec.template.spec.volumes[0].secret.secretName, 'kube-cache-proxy-pool-tls');
    assert.deepEqual(m.byKind('Service').spec.selector, deployment.spec.selector.matchLabels);
    const dry = await dryRun(m);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(dry.stdout.trim().split('\n').length, 6, dry.stdout);
    await applyRbac(m, name);
    for (const resource of ['pods', 'nodes', 'services', 'endpointslices.discovery.k8s.io']) {
      for (const verb of ['list', 'watch'])
        assert.equal(await canI(m, verb, resource, 'kube-system', name), true, `${verb} ${resource}`);
      assert.equal(
        await canI(m, 'get', resource, 'kube-system', name),
        false,
        `get ${resource} must be denied`,
      );
    }
    assert.equal(
      await canI(m, 'create', 'subjectaccessreviews.authorization.k8s.io', m.namespace, name),
      true,
    );
    assert.equal(await canI(m, 'list', 'secrets', 'kube-system', name), false);
    assert.equal(await canI(m, 'impersonate', 'users', m.namespace, name), false);
  });
});
