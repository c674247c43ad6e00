import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CI_SPECS } from '../../conformance/ci-subset.ts';
import { FULL_FAMILIES, fullFocus } from '../../conformance/full-subset.ts';
import { skipRegex } from '../../conformance/skips.ts';

// Ginkgo matches the focus against "<suite description> <spec text>".
const runs = (name: string) =>
  new RegExp(fullFocus()).test(`Kubernetes e2e suite ${name}`) &&
  !new RegExp(skipRegex()).test(`Kubernetes e2e suite ${name}`);

describe('the full subset', () => {
  it('runs every spec of the CI list', () => {
    for (const name of CI_SPECS) assert.ok(runs(name), name);
  });

  it('runs the API-only specs of the other sigs and every sig-api-machinery area', () => {
    for (const name of [
      '[sig-api-machinery] ResourceQuota should create a ResourceQuota and capture the life of a pod. [Conformance]',
      '[sig-api-machinery] Garbage collector should orphan pods created by rc if delete options say so [Conformance] [Serial]',
      '[sig-api-machinery] Servers with support for API chunking should support continue listing from the last key if the original version has been compacted away, though the list is inconsistent [Conformance] [Slow]',
      '[sig-network] Services should complete a service status lifecycle [Conformance]',
      '[sig-network] IngressClass API should support creating IngressClass API operations [Conformance]',
      '[sig-auth] SubjectReview should support SubjectReview API operations [Conformance]',
      '[sig-auth] Certificates API [Privileged:ClusterAdmin] should support CSR API operations [Conformance]',
      '[sig-storage] CSIStorageCapacity should support CSIStorageCapacities API operations [Conformance]',
      '[sig-scheduling] LimitRange should create a LimitRange with defaults and ensure pod has those defaults applied. [Conformance]',
      '[sig-node] ConfigMap should fail to create ConfigMap with empty key [Conformance]',
    ])
      assert.ok(runs(name), name);
  });

  it('runs no spec that execs or needs a real container, and no other area of those sigs', () => {
    for (const name of [
      '[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should mutate pod [Conformance]',
      '[sig-network] Services should release NodePorts on delete',
      '[sig-network] Services should serve a basic endpoint from pods [Conformance]',
      '[sig-node] ConfigMap should be consumable via environment variable [Conformance] [NodeConformance]',
      '[sig-auth] ServiceAccounts should mount an API token into pods [Conformance]',
      '[sig-apps] StatefulSet Basic StatefulSet functionality [StatefulSetBasic] should perform rolling updates [Conformance]',
      '[sig-storage] PersistentVolumes NFS with Single PV - PVC pairs create a PVC and a pre-bound PV: test write access',
    ])
      assert.ok(!runs(name), name);
  });

  it('names each family once', () => {
    assert.equal(new Set(FULL_FAMILIES.map((f) => f.family)).size, FULL_FAMILIES.length);
  });
});
