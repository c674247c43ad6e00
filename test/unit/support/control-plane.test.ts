/**
 * The control-plane workload's comparison helpers (test/support/control-plane/): the final-state
 * normalisation keeps what the workload decided and drops what differs between two clusters by
 * construction, the comparison names what differs, and the proxy's read counters are summed by
 * how they were answered.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareStates, normalise } from '../../support/control-plane/final-state.ts';
import { proxyReads, upstreamSince } from '../../support/control-plane/proxy-reads.ts';

describe('control-plane final state', () => {
  const pod = (name: string, uid: string, ip: string, vol: string, node: string) => ({
    metadata: {
      name,
      generateName: 'web-6596668f4f-',
      uid,
      resourceVersion: '812',
      creationTimestamp: '2026-12-06T11:49:59Z',
      managedFields: [{ manager: 'kube-controller-manager' }],
      labels: { app: 'web', 'batch.kubernetes.io/controller-uid': uid },
    },
    spec: { nodeName: node, volumes: [{ name: vol }] },
    status: { podIP: ip, startTime: '2026-12-06T11:50:01.123456Z', phase: 'Running' },
  });

  it('two pods that differ only by what a cluster generates normalise equal', () => {
    const a = pod(
      'web-6596668f4f-abcde',
      '0b6b2a5e-1c1f-4d0e-9a4b-3c2d1e0f9a8b',
      '10.0.0.7',
      'kube-api-access-x1y2z',
      'kwok-node-0',
    );
    const b = pod(
      'web-6596668f4f-fghij',
      '9f8e7d6c-5b4a-4321-8fed-cba987654321',
      '10.0.0.9',
      'kube-api-access-q8vcw',
      'kwok-node-2',
    );
    const gen = new Map([
      ['web-6596668f4f-abcde', 'web-6596668f4f-<generated>'],
      ['web-6596668f4f-fghij', 'web-6596668f4f-<generated>'],
    ]);
    const na = normalise(a, gen);
    assert.deepEqual(na, normalise(b, gen));
    assert.deepEqual(na, {
      metadata: {
        name: 'web-6596668f4f-<generated>',
        generateName: 'web-6596668f4f-',
        labels: { app: 'web', 'batch.kubernetes.io/controller-uid': '<uid>' },
      },
      spec: { nodeName: 'kwok-node-<n>', volumes: [{ name: 'kube-api-access-<generated>' }] },
      status: { podIP: '<ip>', startTime: '<time>', phase: 'Running' },
    });
  });

  it('what the workload decided still differs', () => {
    const gen = new Map<string, string>();
    const a = pod('p', 'u', '1', 'v', 'n');
    const b = { ...a, status: { ...a.status, phase: 'Pending' } };
    assert.notDeepEqual(normalise(a, gen), normalise(b, gen));
  });

  it('compareStates names the kind and the objects on each side only', () => {
    assert.deepEqual(compareStates({ pods: ['a', 'b'], jobs: ['j'] }, { pods: ['a', 'b'], jobs: ['j'] }), []);
    assert.deepEqual(compareStates({ pods: ['a', 'b'] }, { pods: ['a', 'c'], jobs: ['j'] }), [
      { kind: 'pods', onlyFirst: ['b'], onlySecond: ['c'] },
      { kind: 'jobs', onlyFirst: [], onlySecond: ['j'] },
    ]);
    // A duplicate on one side is a difference too.
    assert.equal(compareStates({ pods: ['a', 'a'] }, { pods: ['a'] }).length, 1);
  });
});

describe('proxyReads', () => {
  it('sums reads from the cache by verb, upstream by verb, reason and resource, and open watchers', () => {
    const text = [
      '# HELP kube_cache_proxy_requests_total Requests.',
      '# TYPE kube_cache_proxy_requests_total counter',
      'kube_cache_proxy_requests_total{verb="LIST",group="apps",version="v1",resource="deployments",subresource="",served_from="cache",code="200",reason=""} 3',
      'kube_cache_proxy_requests_total{verb="LIST",group="",version="v1",resource="pods",subresource="",served_from="cache",code="200",reason=""} 2',
      'kube_cache_proxy_requests_total{verb="WATCH",group="apps",version="v1",resource="deployments",subresource="",served_from="upstream",code="200",reason="not-cached"} 1',
      'kube_cache_proxy_requests_total{verb="POST",group="",version="v1",resource="pods",subresource="",served_from="upstream",code="201",reason="not-get"} 9',
      'kube_cache_proxy_requests_total{verb="LIST",group="",version="v1",resource="pods",subresource="",served_from="upstream",code="200",reason="write-pending"} 0',
      '# HELP kube_cache_proxy_registered_watchers Watchers.',
      '# TYPE kube_cache_proxy_registered_watchers gauge',
      'kube_cache_proxy_registered_watchers{group="",resource="pods"} 4',
      'kube_cache_proxy_registered_watchers{group="apps",resource="deployments"} 2',
      '',
    ].join('\n');
    assert.deepEqual(proxyReads(text), {
      cache: { LIST: 5 },
      upstream: { 'WATCH not-cached deployments.apps': 1 },
      openCacheWatchers: 6,
    });
  });
});

describe('upstreamSince', () => {
  it('keeps only the upstream reads counted after the first snapshot', () => {
    const a = {
      cache: {},
      upstream: { 'WATCH not-cached pods': 1, 'LIST write-pending pods': 2 },
      openCacheWatchers: 0,
    };
    const b = {
      cache: {},
      upstream: { 'WATCH not-cached pods': 1, 'LIST write-pending pods': 3, 'WATCH not-cached secrets': 1 },
      openCacheWatchers: 0,
    };
    assert.deepEqual(upstreamSince(a, b), { 'LIST write-pending pods': 1, 'WATCH not-cached secrets': 1 });
  });
});
