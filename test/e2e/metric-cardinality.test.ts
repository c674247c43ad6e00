/**
 * Issue 29 item 1: metric series are created only by what is real. 10,000 requests for random
 * group/version/resource/subresource paths, against the real apiserver through a proxy with
 * `--delegated-auth` over TLS, a third each without a credential (passed upstream as anonymous),
 * with a token the TokenReview rejects (refused 401 by the proxy) and with the admin's token
 * (passed upstream, 404): the number of `kube_cache_proxy_` series in `/metrics` is the same
 * before and after (once the fixed values exist, after a first 200 requests).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { prng } from '../support/prng.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';
import { randomResourcePath } from '../support/random-paths.ts';

const CONCURRENCY = 32;

describe('issue 29: random resource names create no metric series', () => {
  let f: Fixture;
  let agent: Agent;
  let p: InProcessProxy;

  before(async () => {
    f = await sharedFixture();
    // Keep-alive connections, one request each at a time: the 10,000 requests reuse them.
    agent = new Agent({ connect: { ca: f.caPem }, connections: CONCURRENCY });
    p = await startProxy(f, { resources: 'configmaps', delegatedAuth: true });
  });
  after(async () => {
    await p?.stop();
    await agent?.close();
  });

  test('10,000 random paths (no credential, a rejected token, the admin token): series before = after', async (t) => {
    const rand = prng(2929);
    const credentials = [{}, { authorization: 'Bearer not-a-valid-token' }, p.auth];
    let sent = 0;
    const send = async (n: number) => {
      const end = sent + n;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (sent < end) {
            const headers = { accept: 'application/json', ...credentials[sent++ % 3] };
            const r = await request(`${p.url}${randomResourcePath(rand)}`, { dispatcher: agent, headers });
            await r.body.dump();
          }
        }),
      );
    };
    const metrics = async () => (await request(`${p.ops}/metrics`)).body.text();
    /** The proxy's series once every request sent so far is counted (recorded after its response closed). */
    const series = async () => {
      const text = await eventually('every request counted', 30_000, async () => {
        const t = await metrics();
        const counted =
          metricSum(t, 'kube_cache_proxy_requests_total') +
          metricSum(t, 'kube_cache_proxy_requests_refused_total');
        return counted === sent ? t : undefined;
      });
      return { text, n: text.split('\n').filter((l) => l.startsWith('kube_cache_proxy_')).length };
    };
    await send(200);
    const before = await series();
    await send(10_000);
    const after = await series();
    t.diagnostic(`kube_cache_proxy_ series: before ${before.n}, after ${after.n}`);
    assert.equal(after.n, before.n, 'no series for a random name');
    // The rejected tokens were refused by the proxy, counted by code only.
    assert.equal(metricSum(after.text, 'kube_cache_proxy_requests_refused_total', { code: '401' }), 3400);
    // Every other request was passed upstream and labelled <other>.
    assert.equal(metricSum(after.text, 'kube_cache_proxy_requests_total', { resource: '<other>' }), 6800);
    assert.equal(metricSum(after.text, 'kube_cache_proxy_metric_series_folded_total'), 0);
  });
});
