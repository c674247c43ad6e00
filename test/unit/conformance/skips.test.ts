import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CI_SPECS, focusFor } from '../../conformance/ci-subset.ts';
import { SKIP_FAMILIES, skipFamilyOf, skipRegex } from '../../conformance/skips.ts';

describe('skipped families and the CI subset', () => {
  it('skip the specs that exec into a pod or need a real container', () => {
    const cases: [string, string][] = [
      [
        '[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should mutate pod [Conformance]',
        'admission webhooks',
      ],
      [
        '[sig-apps] StatefulSet Basic StatefulSet functionality [StatefulSetBasic] should perform rolling updates [Conformance]',
        'exec into a pod',
      ],
      [
        '[sig-node] Pods should support remote command execution over websockets [NodeConformance] [Conformance]',
        'exec into a pod',
      ],
      [
        '[sig-api-machinery] Aggregator Should be able to support the 1.17 Sample API Server using the current Aggregator [Conformance]',
        'aggregated API servers',
      ],
      [
        '[sig-api-machinery] CustomResourceFieldSelectors [Privileged:ClusterAdmin] CustomResourceFieldSelectors MUST list and watch custom resources matching the field selector [Conformance]',
        'conversion webhooks',
      ],
      ['[sig-network] DNS should provide DNS for services  [Conformance]', 'pod networking'],
      // The full subset's areas: the specs that exec through a helper (no "exec" in their names).
      [
        '[sig-network] EndpointSlice should support a Service with multiple ports specified in multiple EndpointSlices [Conformance]',
        'exec into a pod',
      ],
      [
        '[sig-network] EndpointSliceMirroring should mirror a custom Endpoint with multiple subsets and same IP address',
        'exec into a pod',
      ],
      [
        '[sig-network] ServiceCIDR and IPAddress API should create Services and serve on different Service CIDRs',
        'exec into a pod',
      ],
      ['[sig-auth] ServiceAccounts should mount an API token into pods [Conformance]', 'exec into a pod'],
      [
        '[sig-auth] ServiceAccounts should mount projected service account token [Conformance]',
        'container output, files and probes',
      ],
      [
        '[sig-api-machinery] OpenAPIV3 should contain OpenAPI V3 for Aggregated APIServer [Serial]',
        'aggregated API servers',
      ],
      [
        '[sig-node] Events should be sent by kubelets and the scheduler about pods scheduling and running',
        'a real kubelet',
      ],
    ];
    for (const [name, family] of cases) assert.equal(skipFamilyOf(name)?.family, family, name);
  });

  it('run API-only specs', () => {
    for (const name of [
      '[sig-api-machinery] Watchers should be able to restart watching from the last resource version observed by the previous watch [Conformance]',
      '[sig-api-machinery] Servers with support for API chunking should return chunks of results for list calls [Conformance]',
      '[sig-storage] VolumeAttachment Conformance should run through the lifecycle of a VolumeAttachment [Conformance]',
      '[sig-network] Services should check NodePort out-of-range',
      '[sig-network] EndpointSlice should create Endpoints and EndpointSlices for Pods matching a Service [Conformance]',
      '[sig-auth] ServiceAccounts should allow opting out of API token automount [Conformance]',
      ...CI_SPECS,
    ])
      assert.equal(skipFamilyOf(name), undefined, name);
  });

  it('the skip expression is every family, and compiles', () => {
    const re = new RegExp(skipRegex());
    for (const f of SKIP_FAMILIES) assert.ok(skipRegex().includes(f.pattern));
    assert.ok(re.test('[sig-api-machinery] AdmissionWebhook x'));
    assert.ok(
      !re.test(
        '[sig-api-machinery] Watchers should observe add, update, and delete watch notifications on configmaps [Conformance]',
      ),
    );
  });

  it('focusFor matches exactly the named specs as Ginkgo sees them (suite description, space, text)', () => {
    const names = ['[sig-x] A (b) should c.d [Conformance]', '[sig-x] E'];
    const re = new RegExp(focusFor(names));
    assert.ok(re.test('Kubernetes e2e suite [sig-x] A (b) should c.d [Conformance]'));
    assert.ok(re.test('Kubernetes e2e suite [sig-x] E'));
    assert.ok(!re.test('Kubernetes e2e suite [sig-x] E and more'));
    assert.ok(!re.test('Kubernetes e2e suite [sig-x] A (b) should cXd [Conformance]'));
  });
});
