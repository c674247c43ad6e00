import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isLongRunning, parseResourcePath } from '../../../src/apimachinery/request-info.ts';

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
