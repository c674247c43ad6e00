import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { createMetrics } from '../../../src/ops/metrics.ts';
import { observeUpstream, upstreamRequestLabels } from '../../../src/ops/upstream-observer.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { logLines } from '../../support/log-lines.ts';

async function samples(m: ReturnType<typeof createMetrics>, name: string): Promise<string[]> {
  const text = await m.registry.getSingleMetricAsString(name);
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

describe('upstreamRequestLabels', () => {
  it('names verbs and resources like apiserver_request_total', () => {
    const l = (m: string, p: string) => {
      const { verb, group, resource, subresource, namespace } = upstreamRequestLabels(m, p);
      return [verb, group, subresource ? `${resource}/${subresource}` : resource, namespace];
    };
    assert.deepEqual(l('GET', '/api/v1/pods?limit=500&resourceVersion=0'), ['LIST', '', 'pods', undefined]);
    assert.deepEqual(l('GET', '/api/v1/namespaces/a/pods?watch=1&sendInitialEvents=true'), [
      'WATCH',
      '',
      'pods',
      'a',
    ]);
    assert.deepEqual(l('GET', '/apis/apps/v1/namespaces/a/deployments/d'), [
      'GET',
      'apps',
      'deployments',
      'a',
    ]);
    assert.deepEqual(l('GET', '/api/v1/pods?watch=false'), ['LIST', '', 'pods', undefined]);
    assert.deepEqual(l('POST', '/api/v1/namespaces/a/configmaps'), ['CREATE', '', 'configmaps', 'a']);
    assert.deepEqual(l('PUT', '/api/v1/namespaces/a/pods/p/status'), ['UPDATE', '', 'pods/status', 'a']);
    assert.deepEqual(l('DELETE', '/api/v1/namespaces/a/configmaps'), [
      'DELETECOLLECTION',
      '',
      'configmaps',
      'a',
    ]);
    assert.deepEqual(l('GET', '/apis/apps/v1'), ['GET', '', '', undefined]);
  });

  it('issue 11 item 13: a subresource is one segment (RequestInfo.Subresource), not the whole rest of the path', () => {
    const a = upstreamRequestLabels('GET', '/api/v1/namespaces/a/pods/p/proxy/any/path/1');
    assert.deepEqual([a.resource, a.subresource], ['pods', 'proxy']);
    const b = upstreamRequestLabels('GET', '/api/v1/namespaces/a/services/s:80/proxy/x?y=1');
    assert.deepEqual([b.resource, b.subresource], ['services', 'proxy']);
  });
});

describe('observeUpstream', () => {
  let server: Server;
  let base: string;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url?.includes('forbidden')) {
        res.writeHead(403, { 'content-type': 'application/json' }).end('{"kind":"Status","code":403}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[]}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('counts by verb/resource/code, observes latency, and <error> when no answer arrives', async () => {
    const m = createMetrics({ processMetrics: false });
    m.resourceLabels.known.add({ group: '', version: 'v1', resource: 'pods' });
    m.resourceLabels.known.add({ group: 'apps', version: 'v1', resource: 'deployments' });
    const agent = new Agent();
    const d = observeUpstream(agent, { metrics: m, clock: new FakeClock(0) });
    for (const path of [
      '/api/v1/pods?limit=500',
      '/api/v1/pods?limit=500',
      '/apis/apps/v1/namespaces/x/deployments/forbidden',
    ]) {
      const r = await request(`${base}${path}`, { dispatcher: d });
      await r.body.text();
    }
    await assert.rejects(request('http://127.0.0.1:1/api/v1/namespaces/a/pods?watch=1', { dispatcher: d }));
    assert.deepEqual(await samples(m, 'kube_cache_proxy_upstream_requests_total'), [
      'kube_cache_proxy_upstream_requests_total{verb="LIST",group="",resource="pods",code="200"} 2',
      'kube_cache_proxy_upstream_requests_total{verb="GET",group="apps",resource="deployments",code="403"} 1',
      'kube_cache_proxy_upstream_requests_total{verb="WATCH",group="",resource="pods",code="<error>"} 1',
    ]);
    const counts = (await samples(m, 'kube_cache_proxy_upstream_request_duration_seconds')).filter((l) =>
      l.includes('_count'),
    );
    assert.deepEqual(counts, [
      'kube_cache_proxy_upstream_request_duration_seconds_count{verb="LIST",group="",resource="pods"} 2',
      'kube_cache_proxy_upstream_request_duration_seconds_count{verb="GET",group="apps",resource="deployments"} 1',
    ]);
    await agent.close();
  });

  it('issue 11 item 13, issue 29: upstream series are bounded (one subresource segment, only known resources, a cap per family)', async () => {
    const m = createMetrics({ processMetrics: false, maxLabelSets: { counter: 3, histogram: 3 } });
    m.resourceLabels.known.add({ group: '', version: 'v1', resource: 'pods' }, ['proxy']);
    const agent = new Agent();
    const d = observeUpstream(agent, { metrics: m, clock: new FakeClock(0) });
    for (const path of [
      '/api/v1/namespaces/a/pods/p/proxy/one',
      '/api/v1/namespaces/a/pods/p/proxy/two/three',
      '/api/v1/pods',
      '/api/v1/scan1',
      '/api/v1/scan2',
      '/api/v1/namespaces/a/pods/p/scan3',
      // Non-resource paths keep their labels; the fourth label set is beyond the cap.
      '/version',
    ]) {
      const r = await request(`${base}${path}`, { dispatcher: d });
      await r.body.text();
    }
    assert.deepEqual(await samples(m, 'kube_cache_proxy_upstream_requests_total'), [
      'kube_cache_proxy_upstream_requests_total{verb="GET",group="",resource="pods/proxy",code="200"} 2',
      'kube_cache_proxy_upstream_requests_total{verb="LIST",group="",resource="pods",code="200"} 1',
      'kube_cache_proxy_upstream_requests_total{verb="LIST",group="<other>",resource="<other>",code="200"} 2',
      'kube_cache_proxy_upstream_requests_total{verb="<other>",group="<other>",resource="<other>",code="<other>"} 2',
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_metric_series_folded_total'), [
      'kube_cache_proxy_metric_series_folded_total{family="upstream_requests_total"} 2',
      'kube_cache_proxy_metric_series_folded_total{family="upstream_request_duration_seconds"} 2',
    ]);
    await agent.close();
  });

  it('logs a 403 as a missing RBAC permission naming verb and resource, once a minute per key', async () => {
    const m = createMetrics({ processMetrics: false });
    const { logger, lines: logged } = logLines();
    const clock = new FakeClock(0);
    const agent = new Agent();
    const d = observeUpstream(agent, { metrics: m, clock, forbiddenLogger: logger });
    const hit = async (path: string) => (await request(`${base}${path}`, { dispatcher: d })).body.text();
    await hit('/apis/apps/v1/deployments?watch=1&x=forbidden');
    await hit('/apis/apps/v1/deployments?watch=1&x=forbidden');
    clock.step(60_000);
    await hit('/apis/apps/v1/deployments?watch=1&x=forbidden');
    await hit('/api/v1/pods');
    assert.equal(logged.length, 2);
    assert.equal(
      logged[0]!.msg,
      "missing RBAC permission: the proxy's identity may not watch deployments.apps cluster-wide; grant list and watch on every cached resource (see deploy/)",
    );
    assert.equal(logged[0]!.level, 50);
    assert.equal(logged[0]!.verb, 'watch');
    assert.equal(logged[0]!.resource, 'deployments');
    assert.equal(logged[0]!.group, 'apps');
    await agent.close();
  });

  it('a 403 on discovery names missing credentials, not RBAC on resources', async () => {
    // Regression: a kubeconfig whose `tokenFile` was not read sent discovery as system:anonymous,
    // logged as "grant list and watch on every cached resource", which cannot fix it.
    const m = createMetrics({ processMetrics: false });
    const { logger, lines: logged } = logLines();
    const agent = new Agent();
    const d = observeUpstream(agent, { metrics: m, clock: new FakeClock(0), forbiddenLogger: logger });
    await (await request(`${base}/api?x=forbidden`, { dispatcher: d })).body.text();
    assert.equal(logged.length, 1);
    assert.equal(
      logged[0]!.msg,
      "forbidden: the proxy's identity may not get /api, which every authenticated user may (system:discovery): check the credentials of the proxy's kubeconfig user (a request without them is system:anonymous)",
    );
    assert.equal(logged[0]!.path, '/api');
    await agent.close();
  });
});
