/** The registry of served caches (`src/server/cache-registry.ts`): which writes a cache tracks. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CacheRegistry } from '../../../src/server/cache-registry.ts';
import { FakeCache } from '../../support/fake-cache.ts';
import { resourceInfo } from '../../support/resource-info.ts';

describe('CacheRegistry', () => {
  it('issue 15: writes are tracked for a namespace-restricted cache in its namespace and cluster-wide only', () => {
    const cms = resourceInfo('v1', 'configmaps', 'ConfigMap');
    const reg = new CacheRegistry([new FakeCache({ ...cms, namespace: 'a' }), new FakeCache()]);
    assert.equal(reg.tracksWritesTo('', 'configmaps', 'a'), true);
    assert.equal(reg.tracksWritesTo('', 'configmaps', 'b'), false);
    assert.equal(
      reg.tracksWritesTo('', 'configmaps', undefined),
      true,
      'a deletecollection of all namespaces',
    );
    assert.equal(reg.tracksWritesTo('', 'pods', 'b'), true);
    assert.equal(reg.tracksWritesTo('', 'secrets', 'a'), false);
  });

  it('--namespace: writes to other namespaces are not tracked, cluster-wide ones are', () => {
    const reg = new CacheRegistry([new FakeCache()], 'a');
    assert.equal(reg.tracksWritesTo('', 'pods', 'a'), true);
    assert.equal(reg.tracksWritesTo('', 'pods', 'b'), false);
    assert.equal(reg.tracksWritesTo('', 'pods', undefined), true);
  });
});
