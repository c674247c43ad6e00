import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceInfo } from '../../../src/apimachinery/gvr.ts';
import { ResourceSet } from '../../../src/resources/resource-set.ts';
import type { Upstream } from '../../../src/upstream/connection.ts';
import { configMapInfo, FakeListerWatcher } from '../../support/fake-lister-watcher.ts';
import { resourceInfo } from '../../support/resource-info.ts';

describe('ResourceSet', () => {
  it('issue 13: a scoped spec puts its scope on the resource (lister-watcher, server) and in states()', async () => {
    const seen: ResourceInfo[] = [];
    const infos: Record<string, ResourceInfo> = {
      pods: resourceInfo('v1', 'pods', 'Pod'),
      configmaps: { ...configMapInfo },
    };
    const set = new ResourceSet({
      upstream: {} as Upstream,
      resources: [{ name: 'pods', fieldSelector: 'spec.nodeName=n1', labelSelector: 'app=x' }, 'configmaps'],
      discover: async (name) => ({ ...infos[name]! }),
      listerWatcherFor: (info) => {
        seen.push(info);
        return new FakeListerWatcher();
      },
      sinkFor: () =>
        ({
          replace() {},
          add() {},
          update() {},
          delete() {},
          bookmark() {},
          setLive() {},
        }) as never,
    });
    set.start();
    try {
      for (let i = 0; i < 100 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
      const byName = Object.fromEntries(seen.map((i) => [i.gvr.resource, i.scope]));
      assert.deepEqual(byName, {
        pods: { fieldSelector: 'spec.nodeName=n1', labelSelector: 'app=x' },
        configmaps: undefined,
      });
      assert.deepEqual(
        set.entries().map((s) => [s.name, s.scope, s.phase]),
        [
          ['pods', { fieldSelector: 'spec.nodeName=n1', labelSelector: 'app=x' }, 'running'],
          ['configmaps', undefined, 'running'],
        ],
      );
    } finally {
      await set.close();
    }
  });

  it('issue 15: an added resource keeps its own namespace; --namespace is the default of namespaced ones only', async () => {
    const seen: ResourceInfo[] = [];
    const set = new ResourceSet({
      upstream: {} as Upstream,
      resources: ['pods', 'nodes'],
      namespace: 'z',
      discover: async (name) =>
        name === 'nodes'
          ? resourceInfo('v1', 'nodes', 'Node', { namespaced: false })
          : resourceInfo('v1', name, 'Pod'),
      listerWatcherFor: (info) => {
        seen.push(info);
        return new FakeListerWatcher();
      },
      sinkFor: () =>
        ({
          replace() {},
          add() {},
          update() {},
          delete() {},
          bookmark() {},
          setLive() {},
        }) as never,
    });
    set.start();
    assert.equal(
      set.add({
        name: 'configmaps.v1',
        origin: 'auto',
        info: { ...resourceInfo('v1', 'configmaps', 'ConfigMap'), namespace: 'a' },
      }),
      true,
    );
    try {
      for (let i = 0; i < 100 && seen.length < 3; i++) await new Promise((r) => setTimeout(r, 5));
      const byName = Object.fromEntries(seen.map((i) => [i.gvr.resource, i.namespace]));
      assert.deepEqual(byName, { pods: 'z', nodes: undefined, configmaps: 'a' });
      assert.deepEqual(
        set.entries().map((s) => [s.name, s.info?.namespace]),
        [
          ['pods', 'z'],
          ['nodes', undefined],
          ['configmaps.v1', 'a'],
        ],
      );
    } finally {
      await set.close();
    }
  });
});
