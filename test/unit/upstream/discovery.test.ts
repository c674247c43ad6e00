import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { createUpstream, type Upstream } from '../../../src/upstream/connection.ts';
import { discoverResource, isBuiltInGroup, parseResourceName } from '../../../src/upstream/discovery.ts';
import { DiscoveryError } from '../../../src/util/errors.ts';

describe('parseResourceName / isBuiltInGroup', () => {
  it('parses resource[.version][.group]', () => {
    assert.deepEqual(parseResourceName('pods'), { resource: 'pods', group: '' });
    assert.deepEqual(parseResourceName('deployments.apps'), { resource: 'deployments', group: 'apps' });
    assert.deepEqual(parseResourceName('widgets.example.com'), { resource: 'widgets', group: 'example.com' });
    assert.deepEqual(parseResourceName('widgets.v1beta1.example.com'), {
      resource: 'widgets',
      version: 'v1beta1',
      group: 'example.com',
    });
    assert.throws(() => parseResourceName('bad/name'), DiscoveryError);
  });

  it('built-in = no dot, or a compiled-in *.k8s.io group', () => {
    assert.deepEqual(
      [
        '',
        'apps',
        'batch',
        'rbac.authorization.k8s.io',
        'gateway.networking.k8s.io',
        'example.com',
        'metrics.k8s.io',
      ].map(isBuiltInGroup),
      [true, true, true, true, false, false, false],
    );
  });
});

describe('discoverResource (against a scripted discovery server)', () => {
  let server: Server;
  let up: Upstream;
  const seen: { path: string; accept?: string; encoding?: string; auth?: string }[] = [];
  const docs: Record<string, unknown> = {
    '/api': { kind: 'APIVersions', versions: ['v1'] },
    '/api/v1': {
      resources: [
        { name: 'pods', kind: 'Pod', namespaced: true, verbs: ['get', 'list', 'watch', 'create'] },
        { name: 'pods/log', kind: 'Pod', namespaced: true, verbs: ['get'] },
        { name: 'bindings', kind: 'Binding', namespaced: true, verbs: ['create'] },
      ],
    },
    '/apis': {
      groups: [
        { name: 'apps', preferredVersion: { version: 'v1' } },
        { name: 'example.com', preferredVersion: { version: 'v1beta1' } },
      ],
    },
    '/apis/apps/v1': {
      resources: [{ name: 'deployments', kind: 'Deployment', namespaced: true, verbs: ['list', 'watch'] }],
    },
    '/apis/example.com/v1beta1': {
      resources: [{ name: 'widgets', kind: 'Widget', namespaced: false, verbs: ['list', 'watch'] }],
    },
  };

  before(async () => {
    server = createServer((req, res) => {
      seen.push({
        path: req.url ?? '',
        accept: req.headers.accept,
        encoding: req.headers['accept-encoding'] as string,
        auth: req.headers.authorization,
      });
      const doc = docs[req.url ?? ''];
      res.writeHead(doc ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(doc ?? { kind: 'Status', code: 404, reason: 'NotFound', message: 'not found' }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'secret-token' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    up = await createUpstream({ loaded: { kc, tokenFile: undefined } });
  });
  after(async () => {
    await up.close();
    server.close();
  });

  it('maps pods, deployments.apps and widgets.example.com to ResourceInfo', async () => {
    assert.deepEqual(await discoverResource(up, 'pods'), {
      gvr: { group: '', version: 'v1', resource: 'pods' },
      kind: 'Pod',
      listKind: 'PodList',
      apiVersion: 'v1',
      namespaced: true,
      verbs: ['get', 'list', 'watch', 'create'],
      builtIn: true,
    });
    const d = await discoverResource(up, 'deployments.apps');
    assert.deepEqual([d.apiVersion, d.kind, d.builtIn], ['apps/v1', 'Deployment', true]);
    const w = await discoverResource(up, 'widgets.example.com');
    assert.deepEqual(
      [w.apiVersion, w.kind, w.namespaced, w.builtIn],
      ['example.com/v1beta1', 'Widget', false, false],
    );
    assert.deepEqual(seen[0], {
      path: '/api',
      accept: 'application/json',
      encoding: 'gzip',
      auth: 'Bearer secret-token',
    });
  });

  it('an unknown group or resource, or one without list+watch, is an error naming it', async () => {
    await assert.rejects(discoverResource(up, 'gadgets.other.io'), {
      name: 'DiscoveryError',
      code: 'KCP_ERR_DISCOVERY_NOT_FOUND',
      message: 'resource "gadgets.other.io": API group "other.io" is not served upstream',
    });
    await assert.rejects(discoverResource(up, 'nodesx'), {
      code: 'KCP_ERR_DISCOVERY_NOT_FOUND',
      message: 'resource "nodesx" is not served upstream (not in /api/v1)',
    });
    await assert.rejects(discoverResource(up, 'bindings'), {
      code: 'KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE',
      message: 'resource "bindings" cannot be cached: it must support list and watch (verbs: create)',
    });
  });

  it('issue 15: groupVersionMissing tells a group-version not served from a resource missing in one', async () => {
    const missing = async (name: string) => {
      try {
        await discoverResource(up, name);
      } catch (err) {
        return (err as { groupVersionMissing?: boolean }).groupVersionMissing;
      }
      return 'resolved';
    };
    assert.equal(await missing('gadgets.other.io'), true, 'group not served');
    assert.equal(await missing('things.v1.g123.bogus.example.com'), true, 'its /apis/G/V answers 404');
    assert.equal(await missing('nodesx'), false, 'v1 is served, nodesx is not in it');
  });
});
