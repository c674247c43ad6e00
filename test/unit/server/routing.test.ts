import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { acceptsPlainJson } from '../../../src/apimachinery/accept.ts';
import { isLongRunning, parseResourcePath } from '../../../src/apimachinery/request-info.ts';
import { CacheRegistry } from '../../../src/server/cache-registry.ts';
import { delegate } from '../../../src/server/delegate.ts';
import { FakeCache } from '../../support/fake-cache.ts';
import { resourceInfo } from '../../support/resource-info.ts';

describe('parseResourcePath', () => {
  it('classifies core, group, namespaced, cluster-wide, single and subresource paths', () => {
    assert.deepEqual(parseResourcePath('/api/v1/pods'), { group: '', version: 'v1', resource: 'pods' });
    assert.deepEqual(parseResourcePath('/api/v1/namespaces/a/pods/p/log'), {
      group: '',
      version: 'v1',
      resource: 'pods',
      namespace: 'a',
      name: 'p',
      subresource: 'log',
    });
    assert.deepEqual(parseResourcePath('/apis/apps/v1/namespaces/a/deployments/'), {
      group: 'apps',
      version: 'v1',
      resource: 'deployments',
      namespace: 'a',
    });
    assert.deepEqual(parseResourcePath('/api/v1/namespaces/a'), {
      group: '',
      version: 'v1',
      resource: 'namespaces',
      name: 'a',
    });
    assert.deepEqual(parseResourcePath('/api/v1/namespaces/a/status'), {
      group: '',
      version: 'v1',
      resource: 'namespaces',
      name: 'a',
      subresource: 'status',
    });
    assert.equal(parseResourcePath('/apis/apps/v1'), undefined);
    assert.equal(parseResourcePath('/version'), undefined);
    assert.equal(parseResourcePath('/api/v1/watch/pods'), undefined);
    assert.equal(parseResourcePath('/api/v1/pods/%zz'), undefined);
  });

  it('long-running: watches, /watch/ paths, log/exec/attach/portforward/proxy', () => {
    const q = (s: string) => new URLSearchParams(s);
    assert.equal(isLongRunning('/api/v1/pods', q('watch=1')), true);
    assert.equal(isLongRunning('/api/v1/pods', q('watch=')), true);
    assert.equal(isLongRunning('/api/v1/pods', q('watch=false')), false);
    assert.equal(isLongRunning('/api/v1/watch/pods', q('')), true);
    assert.equal(isLongRunning('/api/v1/namespaces/a/pods/p/log', q('follow=true')), true);
    assert.equal(isLongRunning('/api/v1/namespaces/a/pods/p/status', q('')), false);
  });
});

describe('acceptsPlainJson', () => {
  const cases: [string | undefined, boolean][] = [
    [undefined, true],
    ['', true],
    ['application/json', true],
    ['*/*', true],
    ['application/json, */*', true],
    [
      'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
      false,
    ],
    ['application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json', false],
    ['application/vnd.kubernetes.protobuf', false],
    ['application/vnd.kubernetes.protobuf,application/json', false],
    ['application/vnd.kubernetes.protobuf;q=0.5,application/json', true],
    ['application/cbor', false],
    ['application/yaml', false],
    ['text/html,application/json', true],
  ];
  for (const [h, want] of cases) it(String(h), () => assert.equal(acceptsPlainJson(h), want));
});

describe('delegate', () => {
  const deployments = resourceInfo('apps/v1', 'deployments', 'Deployment');
  const reg = new CacheRegistry([new FakeCache(), new FakeCache(deployments)]);
  const r = (method: string, url: string, headers: Record<string, string> = {}) => {
    const [path, qs = ''] = url.split('?');
    const x = delegate(reg, method, path!, new URLSearchParams(qs), headers);
    return x.kind === 'cache' ? x.verb : 'upstream';
  };

  it('serves list/get/watch of the cached GroupVersion only', () => {
    assert.equal(r('GET', '/api/v1/pods'), 'list');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods'), 'list');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods/p'), 'get');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods?watch=true'), 'watch');
    assert.equal(r('GET', '/apis/apps/v1/deployments'), 'list');
    assert.equal(r('GET', '/apis/apps/v1beta2/deployments'), 'upstream');
    assert.equal(r('GET', '/api/v1/configmaps'), 'upstream');
  });

  it('passes through writes, subresources, odd paths, impersonation and non-JSON', () => {
    assert.equal(r('POST', '/api/v1/namespaces/a/pods'), 'upstream');
    assert.equal(r('HEAD', '/api/v1/pods'), 'upstream');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods/p/log'), 'upstream');
    assert.equal(r('GET', '/api/v1/pods/p'), 'upstream');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods/p?watch=1'), 'upstream');
    assert.equal(r('GET', '/api/v1/pods', { 'impersonate-user': 'bob' }), 'upstream');
    assert.equal(
      r('GET', '/api/v1/pods', { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' }),
      'upstream',
    );
  });

  it('--namespace: only that namespace is served', () => {
    const ns = new CacheRegistry([new FakeCache()], 'a');
    const k = (p: string) => delegate(ns, 'GET', p, new URLSearchParams(), {}).kind;
    assert.equal(k('/api/v1/namespaces/a/pods'), 'cache');
    assert.equal(k('/api/v1/namespaces/b/pods'), 'upstream');
    assert.equal(k('/api/v1/pods'), 'upstream');
  });
});
