import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceInfo } from '../../../src/apimachinery/gvr.ts';
import { configuredRecheck, ResourceSet } from '../../../src/resources/resource-set.ts';
import type { Upstream } from '../../../src/upstream/connection.ts';
import { DiscoveryError } from '../../../src/util/errors.ts';
import { until } from '../../support/eventually.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { configMapInfo, FakeListerWatcher, noopSink } from '../../support/fake-lister-watcher.ts';
import { logLines } from '../../support/log-lines.ts';
import { resourceInfo } from '../../support/resource-info.ts';

const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

describe('configuredRecheck (issue 15: a configured CRD re-created with another scope)', () => {
  function harness(answers: (() => ResourceInfo)[]) {
    const clock = new FakeClock();
    const { logger: log, lines } = logLines<{
      level: number;
      msg: string;
      change?: string;
      resource?: string;
    }>();
    let unserved = 0;
    let asked = 0;
    const recheck = configuredRecheck({
      info: resourceInfo('example.com/v1', 'widgets', 'Widget'),
      discover: async () => answers[Math.min(asked++, answers.length - 1)]!(),
      unserve: () => unserved++,
      clock,
      log,
    });
    const onRelist = () => recheck.relisted();
    return { clock, lines, onRelist, unserved: () => unserved, asked: () => asked };
  }
  const same = () => resourceInfo('example.com/v1', 'widgets', 'Widget');
  const cluster = () => resourceInfo('example.com/v1', 'widgets', 'Widget', { namespaced: false });

  it('a changed scope: unserved once, one error naming the resource, the change and the remedy', async () => {
    const h = harness([cluster]);
    h.onRelist();
    await flush();
    h.onRelist();
    await flush();
    assert.equal(h.unserved(), 1);
    assert.equal(h.asked(), 1, 'done: not asked again');
    assert.equal(h.lines.length, 1);
    assert.equal(h.lines[0]?.level, 50);
    assert.equal(h.lines[0]?.resource, 'widgets.example.com');
    assert.equal(h.lines[0]?.change, 'scope Namespaced → Cluster');
    assert.match(h.lines[0]?.msg ?? '', /its requests pass upstream; restart the proxy/);
  });

  it('unchanged: asked again 5 s later (discovery trailing the storage); a failing discovery changes nothing', async () => {
    const h = harness([
      same,
      () => {
        throw new DiscoveryError('KCP_ERR_DISCOVERY_NOT_FOUND', 'widgets', 'not served');
      },
      cluster,
    ]);
    h.onRelist();
    await flush();
    assert.equal(h.asked(), 1);
    await h.clock.step(5_000);
    await flush();
    assert.equal(h.asked(), 2);
    assert.equal(h.unserved(), 0);
    h.onRelist();
    await flush();
    assert.equal(h.unserved(), 1);
  });
});

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
      sinkFor: noopSink,
    });
    set.start();
    try {
      await until('two lister-watchers', () => seen.length >= 2);
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
      sinkFor: noopSink,
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
      await until('three lister-watchers', () => seen.length >= 3);
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

describe('ResourceSet: the set owns its resources', () => {
  const set = () =>
    new ResourceSet({
      upstream: {} as Upstream,
      resources: [],
      discover: async (name) => resourceInfo('v1', name.split('.')[0]!, 'Thing'),
      listerWatcherFor: () => new FakeListerWatcher(),
    });
  const added = { name: 'configmaps.v1', origin: 'auto' as const, info: { ...configMapInfo } };

  it('add before start is refused (nothing could serve it); after start it runs; a second add of the name is refused', async () => {
    const s = set();
    assert.equal(s.add(added), false);
    assert.deepEqual(s.entries(), []);
    const served: string[] = [];
    s.start({ serve: (c) => served.push(c.resource.gvr.resource), unserve: () => {} });
    assert.equal(s.add(added), true);
    assert.equal(s.add(added), false);
    assert.equal(s.get('configmaps.v1')?.origin, 'auto');
    await until('a cache served', () => served.length > 0);
    assert.deepEqual(served, ['configmaps']);
    await s.close();
    assert.equal(s.add({ ...added, name: 'other.v1' }), false, 'closed');
  });

  it('remove unserves, stops and forgets the resource; its bytes leave totalBytes', async () => {
    const s = set();
    const unserved: string[] = [];
    s.start({ serve: () => {}, unserve: (c) => unserved.push(c.resource.gvr.resource) });
    s.add(added);
    await until('the added cache', () => Boolean(s.get('configmaps.v1')?.cache));
    assert.ok(s.get('configmaps.v1')?.cache);
    assert.equal(await s.remove('configmaps.v1'), true);
    assert.deepEqual(unserved, ['configmaps']);
    assert.equal(s.get('configmaps.v1'), undefined);
    assert.equal(s.totalBytes(), 0);
    assert.equal(await s.remove('configmaps.v1'), false);
    await s.close();
  });
});
