/**
 * A watch from the RV of the LIST that started an on-demand cache (`--resources=auto`), against
 * the fixture apiserver, side by side. Found by the upstream e2e spec `ResourceQuota should apply
 * changes to a resourcequota status` run on its own: it LISTs resourcequotas (the first request
 * of the resource: answered upstream at RV N, and it starts the cache), creates a quota, and
 * watches from N. The cache's first snapshot S was taken after the create, so N was below its
 * window and the resource had changed since (no proof possible): the proxy answered 410 "too old
 * resource version: N (S)" where the apiserver streams the ADDED event. Each round starts a fresh
 * proxy (a fresh cache); the round counts only when the proxy did take that path
 * (`reason="watch-outside-window"`), and at least one must.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { startProxy } from '../support/proxy.ts';

/** Fresh proxies at most; the test stops at the first round that took the forwarded path. */
const ROUNDS = 8;

describe('a watch from the RV of the LIST that started an on-demand cache', () => {
  let f: Fixture;
  let agent: Agent;
  let ns: string;
  const headers = () => ({ accept: 'application/json', authorization: `Bearer ${f.tokens.admin}` });

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('rq-resume');
  });
  after(async () => {
    await agent?.close();
  });

  /** The first line of a watch (ends by its timeoutSeconds=3), parsed. */
  const firstEvent = async (base: string, path: string) => {
    const r = await request(`${base}${path}`, { dispatcher: agent, headers: headers() });
    assert.equal(r.statusCode, 200);
    const text = await r.body.text();
    const line = text.split('\n')[0] ?? '';
    return JSON.parse(line) as {
      type: string;
      object: {
        kind: string;
        code?: number;
        message?: string;
        metadata: { name?: string; resourceVersion?: string };
      };
    };
  };

  test('streams the events after that RV, as the apiserver does (was 410 from the cache)', async () => {
    let forwarded = 0;
    for (let round = 0; round < ROUNDS && forwarded === 0; round++) {
      const p = await startProxy(f, { resources: 'auto' });
      try {
        const label = `rq-resume=r${round}`;
        const list = await request(
          `${p.url}/api/v1/resourcequotas?labelSelector=${encodeURIComponent(label)}`,
          {
            headers: headers(),
          },
        );
        const body = (await list.body.json()) as { metadata: { resourceVersion: string } };
        assert.equal(list.statusCode, 200);
        assert.ok(list.headers['audit-id'] !== undefined, 'the first LIST of the resource went upstream');
        const n = body.metadata.resourceVersion;
        // Created through the proxy at once, as the spec does: usually before the cache's first snapshot.
        const created = await request(`${p.url}/api/v1/namespaces/${ns}/resourcequotas`, {
          method: 'POST',
          headers: { ...headers(), 'content-type': 'application/json' },
          body: JSON.stringify({
            metadata: { name: `q${round}`, labels: { 'rq-resume': `r${round}` } },
            spec: { hard: { cpu: '500m' } },
          }),
        });
        const q = (await created.body.json()) as { metadata: { resourceVersion: string } };
        assert.equal(created.statusCode, 201);
        // Wait until the cache serves (an RV=0 LIST without the apiserver's Audit-Id) and holds it.
        for (let i = 0; ; i++) {
          const r = await request(
            `${p.url}/api/v1/resourcequotas?resourceVersion=0&labelSelector=${encodeURIComponent(label)}`,
            {
              headers: headers(),
            },
          );
          const l = (await r.body.json()) as { items: unknown[] };
          if (r.headers['audit-id'] === undefined && l.items.length === 1) break;
          assert.ok(i < 300, 'the on-demand cache did not sync within 30 s');
          await new Promise((res) => setTimeout(res, 100));
        }
        const path = `/api/v1/namespaces/${ns}/resourcequotas?watch=1&allowWatchBookmarks=true&labelSelector=${encodeURIComponent(label)}&resourceVersion=${n}&timeoutSeconds=3`;
        const [via, direct] = await Promise.all([firstEvent(p.url, path), firstEvent(f.server, path)]);
        assert.deepEqual(
          {
            type: direct.type,
            name: direct.object.metadata.name,
            rv: direct.object.metadata.resourceVersion,
          },
          { type: 'ADDED', name: `q${round}`, rv: q.metadata.resourceVersion },
          'the apiserver streams the create',
        );
        assert.deepEqual(
          { type: via.type, name: via.object.metadata.name, rv: via.object.metadata.resourceVersion },
          {
            type: direct.type,
            name: direct.object.metadata.name,
            rv: direct.object.metadata.resourceVersion,
          },
          `through the proxy: ${JSON.stringify(via)}`,
        );
        const metrics = await (await fetch(`${p.ops}/metrics`)).text();
        forwarded = metricSum(metrics, 'kube_cache_proxy_requests_total', {
          reason: 'watch-outside-window',
        });
      } finally {
        await p.stop();
      }
    }
    assert.ok(
      forwarded > 0,
      `in ${ROUNDS} rounds the cache never synced after the create (the case never arose)`,
    );
  });
});
