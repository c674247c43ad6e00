import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { cacheRbacRules, resourceNames, SNAPSHOT_IDENTITY_RULE } from '../../support/rbac-rules.ts';

// Structural checks on the source manifests (no kubectl needed). test/e2e/deploy.test.ts renders
// them with kustomize and applies them with a server-side dry-run against a real apiserver.
const load = (p: string) => parse(readFileSync(new URL(`../../../deploy/${p}`, import.meta.url), 'utf8'));

const deployment = load('base/deployment.yaml');
const pod = deployment.spec.template.spec;
const sidecar = pod.initContainers[0];
const resourcesArg = (sidecar.args as string[])
  .find((a) => a.startsWith('--resources='))!
  .slice('--resources='.length);

describe('deploy/base', () => {
  it('runs kube-cache-proxy as a native sidecar probed on the ops listener', () => {
    assert.equal(sidecar.name, 'kube-cache-proxy');
    assert.equal(sidecar.restartPolicy, 'Always');
    assert.ok(sidecar.args.includes('--listen=127.0.0.1:8001'));
    assert.ok(sidecar.args.includes('--ops-listen=0.0.0.0:8081'));
    assert.deepEqual(sidecar.ports, [{ name: 'ops', containerPort: 8081 }]);
    assert.equal(sidecar.livenessProbe.httpGet.path, '/livez');
    // Startup waits for the apiserver; readiness does not follow its outages (docs/operations.md).
    assert.equal(sidecar.readinessProbe.httpGet.path, '/readyz?exclude=upstream');
    assert.equal(sidecar.startupProbe.httpGet.path, '/readyz');
    for (const p of ['livenessProbe', 'readinessProbe', 'startupProbe'])
      assert.equal(sidecar[p].httpGet.port, 'ops');
  });

  it('sets requests, limits and a non-root read-only security context on every container', () => {
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.runAsUser, 65532);
    assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
    for (const c of [...pod.initContainers, ...pod.containers]) {
      assert.ok(c.resources.requests.cpu && c.resources.requests.memory, `${c.name} requests`);
      assert.ok(c.resources.limits.memory, `${c.name} memory limit`);
      assert.deepEqual(c.securityContext, {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
      });
    }
  });

  it('points the controller at the sidecar through the kubeconfig ConfigMap', () => {
    const kubeconfig = parse(load('base/kubeconfig-configmap.yaml').data.kubeconfig);
    assert.equal(kubeconfig.clusters[0].cluster.server, 'http://127.0.0.1:8001');
    const controller = pod.containers[0];
    assert.deepEqual(controller.env, [{ name: 'KUBECONFIG', value: '/etc/kube-cache-proxy/kubeconfig' }]);
    assert.equal(controller.volumeMounts[0].mountPath, '/etc/kube-cache-proxy');
    assert.equal(pod.volumes[0].configMap.name, 'kube-cache-proxy-kubeconfig');
    assert.equal(pod.serviceAccountName, load('base/serviceaccount.yaml').metadata.name);
  });

  it('grants exactly list and watch on the cached resources', () => {
    assert.equal(resourcesArg, 'configmaps,pods,deployments.apps');
    assert.deepEqual(load('base/clusterrole.yaml').rules, cacheRbacRules(resourcesArg));
  });
});

describe('deploy/overlays/namespaced', () => {
  it('uses a Role with the same rules and adds --namespace', () => {
    assert.deepEqual(load('overlays/namespaced/role.yaml').rules, cacheRbacRules(resourcesArg));
    const k = load('overlays/namespaced/kustomization.yaml');
    assert.match(JSON.stringify(k.patches), /--namespace=\$\(POD_NAMESPACE\)/);
    assert.deepEqual(
      sidecar.env.find((e: { name: string }) => e.name === 'POD_NAMESPACE').valueFrom.fieldRef.fieldPath,
      'metadata.namespace',
    );
  });
});

describe('deploy/overlays/node-local', () => {
  const ds = load('overlays/node-local/daemonset.yaml');
  const spec = ds.spec.template.spec;
  const proxy = spec.containers[0];
  const args = proxy.args as string[];
  const arg = (flag: string) => args.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1);

  it('is a hostNetwork DaemonSet on every node, system-node-critical, tolerating every taint', () => {
    assert.equal(ds.kind, 'DaemonSet');
    assert.equal(spec.hostNetwork, true);
    assert.equal(spec.dnsPolicy, 'ClusterFirstWithHostNet');
    assert.equal(spec.priorityClassName, 'system-node-critical');
    assert.deepEqual(spec.tolerations, [{ operator: 'Exists' }]);
    // Two pods cannot bind the same host port: no surge.
    assert.deepEqual(ds.spec.updateStrategy.rollingUpdate, { maxUnavailable: 1, maxSurge: 0 });
  });

  it("listens on the node's loopback with TLS and --delegated-auth, from the mounted Secret", () => {
    assert.equal(arg('--listen'), '127.0.0.1:6446');
    assert.ok(args.includes('--delegated-auth'));
    assert.ok(args.includes('--host-network'));
    assert.equal(arg('--tls-cert-file'), '/etc/kube-cache-proxy-tls/tls.crt');
    assert.equal(arg('--tls-private-key-file'), '/etc/kube-cache-proxy-tls/tls.key');
    assert.deepEqual(proxy.volumeMounts, [
      { name: 'tls', mountPath: '/etc/kube-cache-proxy-tls', readOnly: true },
      { name: 'snapshots', mountPath: '/var/lib/kube-cache-proxy/snapshots' },
    ]);
    assert.equal(spec.volumes[0].secret.secretName, 'kube-cache-proxy-node-local-tls');
    assert.equal(
      args.some((a) => a.startsWith('--kubeconfig')),
      false,
      'in-cluster upstream',
    );
    assert.equal(args.includes('--impersonate-certificate-clients'), false);
  });

  it('snapshots to a hostPath (survives the pod), made 0700 of uid 65532 by a root init step with CHOWN only', () => {
    assert.equal(arg('--snapshot-dir'), '/var/lib/kube-cache-proxy/snapshots');
    assert.equal(args.includes('--snapshot-secrets'), false);
    const vol = spec.volumes.find((v: { name: string }) => v.name === 'snapshots');
    assert.deepEqual(vol.hostPath, {
      path: '/var/lib/kube-cache-proxy/snapshots',
      type: 'DirectoryOrCreate',
    });
    const init = spec.initContainers[0];
    assert.deepEqual(init.securityContext.capabilities, { drop: ['ALL'], add: ['CHOWN'] });
    assert.equal(init.securityContext.allowPrivilegeEscalation, false);
    assert.match(init.command.join(' '), /chownSync\(d, 65532, 65532\); fs\.chmodSync\(d, 0o700\)/);
    assert.deepEqual(init.volumeMounts, [
      { name: 'snapshots', mountPath: '/var/lib/kube-cache-proxy/snapshots' },
    ]);
  });

  it("caches this node's pods and Node (NODE_NAME from the downward API), Services and EndpointSlices", () => {
    assert.equal(
      arg('--resources'),
      'pods[fieldSelector=spec.nodeName=$(NODE_NAME)],nodes[fieldSelector=metadata.name=$(NODE_NAME)],services,endpointslices.discovery.k8s.io',
    );
    const env = Object.fromEntries(
      (proxy.env as Array<{ name: string; valueFrom?: { fieldRef: { fieldPath: string } } }>).map((e) => [
        e.name,
        e.valueFrom?.fieldRef.fieldPath,
      ]),
    );
    assert.equal(env.NODE_NAME, 'spec.nodeName');
    assert.equal(env.HOST_IP, 'status.hostIP');
    assert.equal(env.POD_IP, 'status.podIP');
  });

  it('probes the ops listener, sets requests and limits and a non-root read-only security context', () => {
    assert.equal(arg('--ops-listen'), '$(HOST_IP):6447');
    assert.deepEqual(proxy.ports, [
      { name: 'https', containerPort: 6446 },
      { name: 'ops', containerPort: 6447 },
    ]);
    assert.equal(proxy.livenessProbe.httpGet.path, '/livez');
    assert.equal(proxy.readinessProbe.httpGet.path, '/readyz?exclude=upstream');
    assert.equal(proxy.startupProbe.httpGet.path, '/readyz');
    for (const p of ['livenessProbe', 'readinessProbe', 'startupProbe'])
      assert.equal(proxy[p].httpGet.port, 'ops');
    for (const k of ['requests', 'limits'])
      assert.ok(proxy.resources[k].cpu && proxy.resources[k].memory, `${k} cpu and memory`);
    assert.equal(spec.securityContext.runAsNonRoot, true);
    assert.deepEqual(proxy.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
  });

  it('grants list/watch on exactly the cached resources, the review APIs, no impersonation', () => {
    assert.ok(arg('--snapshot-dir'));
    assert.deepEqual(load('overlays/node-local/clusterrole.yaml').rules, [
      ...cacheRbacRules(arg('--resources')!),
      SNAPSHOT_IDENTITY_RULE,
    ]);
    assert.equal(
      load('overlays/node-local/auth-delegator-clusterrolebinding.yaml').roleRef.name,
      'system:auth-delegator',
    );
    const k = load('overlays/node-local/kustomization.yaml');
    assert.equal(JSON.stringify(k).includes('impersonat'), false);
  });

  it("gives agents a kubeconfig for https://127.0.0.1:6446 with the proxy's CA and their own token", () => {
    const cm = load('overlays/node-local/agent-kubeconfig-configmap.yaml');
    const kc = parse(cm.data.kubeconfig);
    assert.deepEqual(kc.clusters[0].cluster, {
      server: `https://${arg('--listen')}`,
      'certificate-authority': 'ca.crt',
    });
    assert.deepEqual(Object.keys(cm.data), ['kubeconfig'], "the CA is the operator's ConfigMap");
    assert.deepEqual(kc.users[0].user, { tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' });
  });

  it('cert-manager: the Certificate writes the mounted Secret, with the IP SAN 127.0.0.1, from a CA Issuer', () => {
    const docs = readFileSync(
      new URL('../../../deploy/overlays/node-local/cert-manager/certificates.yaml', import.meta.url),
      'utf8',
    )
      .split(/^---$/m)
      .map((d) => parse(d));
    const serving = docs.find((d) => d.metadata.name === 'kube-cache-proxy-node-local-tls');
    assert.equal(serving.spec.secretName, spec.volumes[0].secret.secretName);
    assert.deepEqual(serving.spec.ipAddresses, ['127.0.0.1']);
    assert.ok(serving.spec.usages.includes('server auth'));
    assert.equal(serving.spec.issuerRef.name, 'kube-cache-proxy-node-local-ca');
    const ca = docs.find((d) => d.metadata.name === 'kube-cache-proxy-node-local-ca');
    assert.equal(ca.spec.isCA, true);
  });
});

describe('cacheRbacRules', () => {
  it('reads the scoped syntax: scopes dropped, commas inside [...] do not split', () => {
    assert.deepEqual(
      resourceNames(
        'pods[fieldSelector=spec.nodeName=n1;labelSelector=a in (x,y)],nodes[fieldSelector=metadata.name=n1],services',
      ),
      ['pods', 'nodes', 'services'],
    );
    assert.deepEqual(
      cacheRbacRules('pods[fieldSelector=spec.nodeName=$(NODE_NAME)],endpointslices.discovery.k8s.io'),
      [
        { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    );
  });

  it('groups resources by API group, core first, deduplicated', () => {
    assert.deepEqual(cacheRbacRules('pods,deployments.apps, configmaps,widgets.example.com,pods,'), [
      { apiGroups: [''], resources: ['configmaps', 'pods'], verbs: ['list', 'watch'] },
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['list', 'watch'] },
      { apiGroups: ['example.com'], resources: ['widgets'], verbs: ['list', 'watch'] },
    ]);
  });
});

describe('deploy/overlays/pool and deploy/helm/kube-cache-proxy', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };

  it('the pool: TLS on 0.0.0.0:8443 with --delegated-auth, the union of the node-local caches unscoped, its RBAC', () => {
    const d = load('overlays/pool/deployment.yaml');
    const args = d.spec.template.spec.containers[0].args as string[];
    const arg = (flag: string) => args.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1);
    assert.equal(arg('--listen'), '0.0.0.0:8443');
    assert.ok(args.includes('--delegated-auth'));
    assert.equal(arg('--tls-cert-file'), '/etc/kube-cache-proxy-tls/tls.crt');
    const nodeLocal = load('overlays/node-local/daemonset.yaml').spec.template.spec.containers[0]
      .args as string[];
    const nodeLocalResources = nodeLocal.find((a) => a.startsWith('--resources='))!.slice(12);
    assert.deepEqual(resourceNames(arg('--resources')!).sort(), resourceNames(nodeLocalResources).sort());
    assert.deepEqual(load('overlays/pool/clusterrole.yaml').rules, cacheRbacRules(arg('--resources')!));
    assert.equal(
      load('overlays/pool/service.yaml').spec.selector['app.kubernetes.io/name'],
      'kube-cache-proxy-pool',
    );
    // An apiserver outage is every replica's: it must not empty the Service (docs/operations.md).
    const pool = d.spec.template.spec.containers[0];
    assert.equal(pool.startupProbe.httpGet.path, '/readyz');
    assert.equal(pool.readinessProbe.httpGet.path, '/readyz?exclude=upstream');
    assert.equal(pool.livenessProbe.httpGet.path, '/livez');
  });

  it("the chart's version and appVersion are the package's, and its default image tag the kustomizations'", () => {
    const chart = load('helm/kube-cache-proxy/Chart.yaml');
    assert.equal(chart.version, pkg.version);
    assert.equal(chart.appVersion, pkg.version);
    for (const k of ['base', 'overlays/node-local', 'overlays/pool'])
      assert.equal(load(`${k}/kustomization.yaml`).images[0].newTag, pkg.version, k);
    const values = load('helm/kube-cache-proxy/values.yaml');
    assert.equal(values.mode, 'sidecar');
    assert.equal(values.image.tag, '');
  });
});
