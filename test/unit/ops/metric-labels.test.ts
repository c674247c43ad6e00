import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  boundCode,
  boundVerb,
  KnownResources,
  OTHER,
  ResourceLabelBounds,
  type ResourceLabels,
  SeriesCap,
  subresourceLabel,
} from '../../../src/ops/metric-labels.ts';
import type { ServedResource } from '../../../src/upstream/discovery.ts';
import { FakeClock } from '../../support/fake-clock.ts';

describe('issue 11 item 13: bounded label values', () => {
  it('verbs outside the apiserver set are <other>; codes are 100–599 or <error>', () => {
    assert.deepEqual(['LIST', 'WATCH', 'DELETECOLLECTION', 'HEAD', 'PROPFIND', 'x'].map(boundVerb), [
      'LIST',
      'WATCH',
      'DELETECOLLECTION',
      'HEAD',
      OTHER,
      OTHER,
    ]);
    assert.deepEqual([200, '404', 499, '<error>', 999, 42].map(boundCode), [
      '200',
      '404',
      '499',
      '<error>',
      OTHER,
      OTHER,
    ]);
  });

  it('a subresource keeps its first segment (RequestInfo.Subresource)', () => {
    assert.equal(subresourceLabel(undefined), '');
    assert.equal(subresourceLabel('status'), 'status');
    assert.equal(subresourceLabel('proxy/a/b/c'), 'proxy');
  });
});

const l = (resource: string, subresource = '', group = '', version = 'v1'): ResourceLabels => ({
  group,
  version,
  resource,
  subresource,
});
const other = { group: OTHER, version: OTHER, resource: OTHER, subresource: '' };
const boundOf = (b: ResourceLabelBounds, x: ResourceLabels) =>
  new Promise<ResourceLabels>((resolve) => b.bound(x, resolve));

describe('issue 29: only real resources label metrics', () => {
  it('cached and discovered resources keep their labels; any other name is <other>, whatever came first', () => {
    const known = new KnownResources();
    known.add({ group: '', version: 'v1', resource: 'configmaps' });
    const b = new ResourceLabelBounds(known);
    // The first-come budget this replaces kept the first 1000 names a client sent.
    assert.deepEqual(b.boundNow(l('thing0')), other);
    assert.deepEqual(b.boundNow(l('configmaps')), l('configmaps'));
    // A known resource with an unknown subresource: the resource is kept.
    assert.deepEqual(b.boundNow(l('configmaps', 'x')), l('configmaps', OTHER));
    assert.deepEqual(b.boundNow(l('thing0', 'x')), { ...other, subresource: OTHER });
    // Another version of a known resource is another name.
    assert.deepEqual(b.boundNow(l('configmaps', '', '', 'v2')), other);
    // A resource named "other" is not confused with the fold value.
    assert.deepEqual(b.boundNow(l('other')), other);
    // Non-resource paths (all "") keep their labels.
    const none = l('', '', '', '');
    assert.equal(b.boundNow(none), none);
  });

  it('an unknown name waits for a discovery refresh, at most one per interval; a failed refresh keeps the set', async () => {
    const clock = new FakeClock(0);
    let served: ServedResource[] = [
      { group: 'apps', version: 'v1', resource: 'deployments', subresource: '' },
      { group: 'apps', version: 'v1', resource: 'deployments', subresource: 'scale' },
    ];
    let calls = 0;
    const known = new KnownResources({ clock, minRefreshIntervalMs: 30_000 });
    const b = new ResourceLabelBounds(known);
    // No source yet: <other> at once, no refresh.
    assert.equal(known.settle(), undefined);
    await known.discoverWith(async () => {
      calls++;
      return served;
    });
    assert.equal(calls, 1);
    assert.deepEqual(await boundOf(b, l('deployments', 'scale', 'apps')), l('deployments', 'scale', 'apps'));
    // A CRD installed after the first refresh: too soon to refresh again, so <other> at once.
    served = [...served, { group: 'example.com', version: 'v1', resource: 'widgets', subresource: '' }];
    assert.deepEqual(await boundOf(b, l('widgets', '', 'example.com')), other);
    assert.equal(calls, 1);
    // 30 s later the first unknown name refreshes, and waits for it: the CRD is labelled.
    await clock.step(30_000);
    const many = Array.from({ length: 100 }, (_, i) => boundOf(b, l(`random${i}`, '', 'x.io')));
    assert.deepEqual(await boundOf(b, l('widgets', '', 'example.com')), l('widgets', '', 'example.com'));
    for (const r of await Promise.all(many)) assert.deepEqual(r, other);
    assert.equal(calls, 2, 'one refresh for 101 unknown names');
    // A refresh that fails keeps the set.
    await clock.step(30_000);
    const errors: unknown[] = [];
    await known.discoverWith(
      async () => {
        throw new Error('down');
      },
      (e) => errors.push(e),
    );
    assert.equal(errors.length, 1);
    assert.deepEqual(b.boundNow(l('deployments', '', 'apps')), l('deployments', '', 'apps'));
  });
});

describe('issue 29: a hard cap on label sets per family', () => {
  it('keeps the first N label sets; later ones fold into one set of <other>s and are counted', () => {
    const folds: string[] = [];
    const cap = new SeriesCap('requests_total', 2, (f) => folds.push(f));
    const s = (verb: string, code: string) => ({ verb, code });
    assert.deepEqual(cap.fold(s('GET', '200')), s('GET', '200'));
    assert.deepEqual(cap.fold(s('GET', '404')), s('GET', '404'));
    assert.deepEqual(cap.fold(s('LIST', '200')), s(OTHER, OTHER));
    // Kept sets stay kept, in any key order.
    assert.deepEqual(cap.fold({ code: '200', verb: 'GET' }), { code: '200', verb: 'GET' });
    assert.deepEqual(cap.fold(s('PUT', '500')), s(OTHER, OTHER));
    assert.deepEqual(folds, ['requests_total', 'requests_total']);
  });
});
