import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { cacheRbacRules } from '../../support/rbac-rules.ts';

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
    assert.equal(sidecar.readinessProbe.httpGet.path, '/readyz');
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

describe('cacheRbacRules', () => {
  it('groups resources by API group, core first, deduplicated', () => {
    assert.deepEqual(cacheRbacRules('pods,deployments.apps, configmaps,widgets.example.com,pods,'), [
      { apiGroups: [''], resources: ['configmaps', 'pods'], verbs: ['list', 'watch'] },
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['list', 'watch'] },
      { apiGroups: ['example.com'], resources: ['widgets'], verbs: ['list', 'watch'] },
    ]);
  });
});
