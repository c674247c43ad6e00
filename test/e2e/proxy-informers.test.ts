/**
 * client-go informers through the whole proxy vs. directly against the apiserver (issue 4):
 * - with the WatchListClient gate ON and OFF, while 1,000 random creates/updates/deletes hit 3
 *   namespaces, every informer ends with the same store as the apiserver and sees no event out
 *   of RV order;
 * - 50 informers through the proxy cause exactly ONE upstream watch (and no LIST), counted from
 *   the apiserver's own /metrics.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Agent, request } from 'undici';
import type { Fixture, ProbeResult } from '../fixture/index.ts';
import { openAdminSession } from '../support/admin-session.ts';
import { eventually } from '../support/eventually.ts';
import { startProbe } from '../support/informer-probe.ts';
import { prng } from '../support/prng.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

/** Per key, the RVs of non-tombstone events must strictly increase. Returns the violations. */
function outOfOrder(r: ProbeResult): string[] {
  const last = new Map<string, bigint>();
  const bad: string[] = [];
  for (const e of r.events) {
    if (e.tombstone || e.rv === '') continue;
    const rv = BigInt(e.rv);
    const prev = last.get(e.key);
    if (prev !== undefined && rv <= prev) bad.push(`${e.key}: ${e.type} rv ${rv} after ${prev}`);
    last.set(e.key, rv);
  }
  return bad;
}

describe('client-go informers through the proxy vs direct', () => {
  let f: Fixture;
  let agent: Agent;
  let auth: Record<string, string>;
  before(async () => ({ f, agent, auth } = await openAdminSession()));
  after(() => agent.close());

  const metrics = async (): Promise<string> => {
    const r = await request(`${f.server}/metrics`, { dispatcher: agent, headers: auth });
    assert.equal(r.statusCode, 200);
    return r.body.text();
  };

  test('gate ON and OFF, proxy and direct: same final store as the apiserver, RVs in order per key, during 1,000 random writes', async (t) => {
    const run = `r${Date.now().toString(36)}`;
    const nss = [await f.newNamespace('inf'), await f.newNamespace('inf'), await f.newNamespace('inf')];
    const proxy: InProcessProxy = await startProxy(f, { resources: 'configmaps' });
    try {
      const selector = `kcp-run=${run}`;
      // A few objects before the informers start, so their initial list is not empty.
      const api = (ns: string, name = '') =>
        `${f.server}/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;
      const body = (ns: string, name: string, v: number) =>
        JSON.stringify({
          metadata: { name, namespace: ns, labels: { 'kcp-run': run } },
          data: { v: String(v) },
        });
      for (const ns of nss) {
        const r = await request(api(ns), {
          dispatcher: agent,
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: body(ns, 'seed', 0),
        });
        assert.equal(r.statusCode, 201);
        await r.body.dump();
      }
      const probes = [true, false].flatMap((watchList) =>
        [proxy.kubeconfig, f.kubeconfigs.adminToken].map((kubeconfig) => ({
          name: `${kubeconfig === proxy.kubeconfig ? 'proxy' : 'direct'} WatchListClient=${watchList}`,
          p: startProbe(f.bin.probe, {
            kubeconfig,
            resource: 'configmaps',
            labelSelector: selector,
            untilStopped: true,
            watchList,
          }),
        })),
      );
      await Promise.all(probes.map((x) => x.p.synced));
      const t0 = Date.now();

      // 1,000 writes by 8 workers; each worker owns its keys, so no write conflicts.
      const rand = prng(42);
      let ops = 0;
      const counts = { create: 0, update: 0, delete: 0 };
      const worker = async (w: number) => {
        const exists = new Map<string, number>();
        const keys = nss.flatMap((ns) => Array.from({ length: 6 }, (_, j) => [ns, `w${w}-${j}`] as const));
        while (ops < 1000) {
          ops++;
          const [ns, name] = keys[Math.floor(rand() * keys.length)]!;
          const k = `${ns}/${name}`;
          const v = exists.get(k);
          let r: Awaited<ReturnType<typeof request>>;
          if (v === undefined) {
            counts.create++;
            r = await request(api(ns), {
              dispatcher: agent,
              method: 'POST',
              headers: { ...auth, 'content-type': 'application/json' },
              body: body(ns, name, 0),
            });
            assert.equal(r.statusCode, 201, k);
            exists.set(k, 0);
          } else if (rand() < 0.6) {
            counts.update++;
            r = await request(api(ns, name), {
              dispatcher: agent,
              method: 'PATCH',
              headers: { ...auth, 'content-type': 'application/merge-patch+json' },
              body: JSON.stringify({ data: { v: String(v + 1) } }),
            });
            assert.equal(r.statusCode, 200, k);
            exists.set(k, v + 1);
          } else {
            counts.delete++;
            r = await request(api(ns, name), { dispatcher: agent, method: 'DELETE', headers: auth });
            assert.equal(r.statusCode, 200, k);
            exists.delete(k);
          }
          await r.body.dump();
        }
      };
      await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
      const writeMs = Date.now() - t0;
      t.diagnostic(`1,000 writes in ${writeMs} ms: ${JSON.stringify(counts)}`);
      assert.equal(counts.create + counts.update + counts.delete, 1000);
      assert.ok(counts.delete > 100 && counts.update > 100, JSON.stringify(counts));
      // A last write every informer sees after all the others (events reach an informer in RV
      // order); each runs until it has seen it, however long the writes took on a loaded machine.
      const marker = await request(api(nss[0]!), {
        dispatcher: agent,
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: body(nss[0]!, 'marker', 0),
      });
      assert.equal(marker.statusCode, 201);
      await marker.body.dump();
      const markerKey = `${nss[0]}/marker`;
      await eventually('every informer saw the last write', 120_000, async () =>
        probes.every(({ p }) => p.events().some((e) => e.key === markerKey)) ? true : undefined,
      );
      for (const { p } of probes) p.stop();

      const l = await request(`${f.server}/api/v1/configmaps?labelSelector=${encodeURIComponent(selector)}`, {
        dispatcher: agent,
        headers: auth,
      });
      const list = (await l.body.json()) as {
        items: { metadata: { namespace: string; name: string; resourceVersion: string } }[];
      };
      const want = list.items
        .map((o) => ({ key: `${o.metadata.namespace}/${o.metadata.name}`, rv: o.metadata.resourceVersion }))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      assert.ok(want.length >= 3);

      for (const { name, p } of probes) {
        const r = await p.done;
        assert.deepEqual(r.store, want, `${name}: final store`);
        assert.deepEqual(outOfOrder(r), [], `${name}: events out of RV order`);
        // Every write after the sync was seen live: at least one event per update/delete.
        const live = r.events.filter((e) => !e.initial);
        assert.ok(live.length >= counts.update + counts.delete, `${name}: ${live.length} live events`);
      }
    } finally {
      await proxy.stop();
    }
  });

  test('50 informers through the proxy: exactly ONE upstream watch and no upstream LIST', async () => {
    // podtemplates: no other test (and no controller, the fixture runs none) watches them, so
    // the apiserver's counters for this resource are ours alone.
    const sel = { resource: 'podtemplates' };
    const open = (m: string) => metricSum(m, 'apiserver_longrunning_requests', { ...sel, verb: 'WATCH' });
    const done = (m: string, verb: string) => metricSum(m, 'apiserver_request_total', { ...sel, verb });
    const m0 = await metrics();
    const proxy = await startProxy(f, { resources: 'podtemplates' });
    let proxyStopped = false;
    try {
      const m1 = await metrics();
      // The reflector's watch-list: one open WATCH, nothing completed, no LIST.
      assert.equal(open(m1) - open(m0), 1);
      assert.equal(done(m1, 'LIST') - done(m0, 'LIST'), 0);
      const probes = Array.from({ length: 50 }, (_, i) =>
        startProbe(f.bin.probe, {
          kubeconfig: proxy.kubeconfig,
          resource: 'podtemplates',
          // Until stopped: with a fixed run time the first informers ended before the last one
          // watched on a loaded machine.
          untilStopped: true,
          watchList: i % 2 === 0,
          quiet: true,
        }),
      );
      await Promise.all(probes.map((p) => p.synced));
      // All 50 informers have listed and are watching (through the proxy) right now.
      // A gate-OFF informer is synced after its LIST; its WATCH follows right after.
      await eventually('50 watchers through the proxy', 60_000, async () =>
        proxy.parts.statusSource.resources()[0]?.watchers === 50 ? true : undefined,
      );
      const m2 = await metrics();
      assert.equal(open(m2) - open(m0), 1, 'open upstream watches while 50 informers watch');
      for (const p of probes) p.stop();
      await Promise.all(probes.map((p) => p.done));
      const m3 = await metrics();
      assert.equal(open(m3) - open(m0), 1);
      assert.equal(done(m3, 'WATCH') - done(m0, 'WATCH'), 0, 'no upstream watch started and ended');
      assert.equal(done(m3, 'LIST') - done(m0, 'LIST'), 0, 'no upstream LIST');
      await proxy.stop();
      proxyStopped = true;
      // Stopping the proxy ends its one watch: the completed-WATCH counter moves by exactly 1.
      // The apiserver counts it once it saw the connection close: wait for that (this polled for
      // a fixed 5 s, short on a loaded machine), then compare.
      const m4 = await eventually('the proxy watch ended at the apiserver', 60_000, async () => {
        const m = await metrics();
        return open(m) === open(m0) ? m : undefined;
      });
      assert.equal(open(m4) - open(m0), 0);
      assert.equal(done(m4, 'WATCH') - done(m0, 'WATCH'), 1);
    } finally {
      if (!proxyStopped) await proxy.stop();
    }
  });
});
