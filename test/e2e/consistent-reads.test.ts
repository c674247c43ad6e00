/**
 * `--consistent-reads=proven` (and, last, the default mode) against the fixture apiserver: writes made by ANOTHER client
 * directly against the apiserver, each followed at once by an RV="" read through the proxy (a
 * LIST, a GET, a consistent watch-list's initial events). Every read must show the write (the
 * object present, at the write's RV or newer), as the apiserver guarantees, and be answered from
 * the cache, not forwarded. A few pairs write another resource (a Lease) between the write and
 * the read, so etcd's revision moves past the configmap's: those are accepted by the gap proof.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { createUpstream, type Upstream } from '../../src/upstream/connection.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

/** Write→read pairs per kind of read. */
const K = 30;

describe('--consistent-reads=proven: writes made directly are seen by the next RV="" read', () => {
  let f: Fixture;
  let up: Upstream;
  let proxy: InProcessProxy;
  /** The default configuration (`--consistent-reads=cache`, watches uncompressed). */
  let plain: InProcessProxy;
  let ns: string;
  let auth: string;

  const direct = async (method: string, path: string, body: unknown) => {
    const r = await request(`${up.baseUrl}${path}`, {
      method: method as 'POST',
      dispatcher: up.dispatcher,
      headers: {
        authorization: auth,
        'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
      },
      body: JSON.stringify(body),
    });
    const text = await r.body.text();
    assert.ok(r.statusCode < 300, `${method} ${path}: ${r.statusCode} ${text}`);
    return JSON.parse(text) as { metadata: { resourceVersion: string } };
  };

  /** The named object as the read through the proxy showed it (its RV), undefined when absent. */
  const read = async (
    kind: 'list' | 'get' | 'watch-list',
    name: string,
    via: InProcessProxy = proxy,
  ): Promise<bigint | undefined> => {
    const coll = `${via.url}/api/v1/namespaces/${ns}/configmaps`;
    if (kind === 'get') {
      const r = await request(`${coll}/${name}`, { headers: via.auth });
      const body = JSON.parse(await r.body.text());
      return r.statusCode === 200 ? BigInt(body.metadata.resourceVersion) : undefined;
    }
    if (kind === 'list') {
      const r = await request(coll, { headers: via.auth });
      const body = JSON.parse(await r.body.text());
      const it = body.items.find((o: { metadata: { name: string } }) => o.metadata.name === name);
      return it ? BigInt(it.metadata.resourceVersion) : undefined;
    }
    const r = await request(
      `${coll}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=30`,
      { headers: via.auth },
    );
    let buf = '';
    let seen: bigint | undefined;
    try {
      for await (const chunk of r.body) {
        buf += chunk.toString();
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          const e = JSON.parse(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
          if (
            e.type === 'BOOKMARK' &&
            e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true'
          )
            return seen;
          if (e.object.metadata.name === name) seen = BigInt(e.object.metadata.resourceVersion);
        }
      }
      throw new Error('the watch-list ended before its initial-events-end bookmark');
    } finally {
      r.body.destroy();
    }
  };

  before(async () => {
    f = await sharedFixture();
    ns = await f.newNamespace('consistent');
    up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
    auth = (await up.authorization()) ?? '';
    await direct('POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'patched' } });
    await direct('POST', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, {
      metadata: { name: 'other' },
    });
    proxy = await startProxy(f, { resources: 'configmaps', args: ['--consistent-reads', 'proven'] });
    plain = await startProxy(f, { resources: 'configmaps' });
  });
  after(async () => {
    await plain?.stop();
    await proxy?.stop();
    await up?.close();
  });

  for (const kind of ['list', 'get', 'watch-list'] as const)
    test(`${kind}: ${K} write→read pairs, no miss, all from the cache`, async () => {
      const metrics = async () => (await request(`${proxy.ops}/metrics`)).body.text();
      const fromCache = async () =>
        metricSum(await metrics(), 'kube_cache_proxy_requests_total', {
          resource: 'configmaps',
          served_from: 'cache',
        });
      const before = await fromCache();
      const misses: string[] = [];
      for (let i = 0; i < K; i++) {
        const name = i % 2 === 0 ? 'patched' : `${kind}-${i}`;
        const wrote =
          i % 2 === 0
            ? await direct('PATCH', `/api/v1/namespaces/${ns}/configmaps/${name}`, { data: { i: String(i) } })
            : await direct('POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name } });
        // Every 10th pair: the revision moves on without a configmap event.
        if (i % 10 === 5)
          await direct('PATCH', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/other`, {
            metadata: { annotations: { i: String(i) } },
          });
        const rv = BigInt(wrote.metadata.resourceVersion);
        const seen = await read(kind, name);
        if (seen === undefined || seen < rv) misses.push(`${name}@${rv}: ${seen ?? 'absent'}`);
      }
      assert.deepEqual(misses, []);
      // A watch is counted when it ended (the last one just now).
      await eventually('every read answered from the cache', 5000, async () =>
        (await fromCache()) - before === K ? true : undefined,
      );
    });

  // The default mode promises read-your-writes for writes through the proxy only; a write made
  // directly is visible once its event arrived, which takes about a millisecond when the
  // reflector's watch is uncompressed. With a gzipped watch (gunzipped off the event loop) about
  // half of such reads missed the write; uncompressed, none in 100 on the bench. A race, so a
  // bound rather than zero: at most 10 of 40 (the gzipped watch missed about 20; uncompressed,
  // 5 of 40 were seen once in CI with the whole suite running beside it).
  for (const kind of ['list', 'get'] as const)
    test(`default mode, ${kind}: 40 write→read pairs miss at most 10 (events arrive uncompressed)`, async () => {
      const misses: string[] = [];
      for (let i = 0; i < 40; i++) {
        const name = i % 2 === 0 ? 'patched' : `plain-${kind}-${i}`;
        const wrote =
          i % 2 === 0
            ? await direct('PATCH', `/api/v1/namespaces/${ns}/configmaps/${name}`, { data: { p: String(i) } })
            : await direct('POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name } });
        const rv = BigInt(wrote.metadata.resourceVersion);
        const seen = await read(kind, name, plain);
        if (seen === undefined || seen < rv) misses.push(`${name}@${rv}: ${seen ?? 'absent'}`);
      }
      assert.ok(misses.length <= 10, `${misses.length} of 40 missed: ${misses.join(', ')}`);
    });
});
