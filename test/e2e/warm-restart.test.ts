/**
 * Warm restart from a snapshot (`--snapshot-dir`, docs/design.md §3) against the real fixture
 * apiserver: a proxy is stopped (its last snapshot written), configmaps are created, updated and
 * deleted while it is down, and a new proxy on the same port and directory resumes from the
 * snapshot. Its clients — client-go informers (watch-list and not) and a raw watcher resuming by
 * resourceVersion as client-go's reflector does — see each change once, in order, with increasing
 * RVs, no 410 and no relist, and end with the store the apiserver has; the proxy itself sends no
 * LIST of the resource but the resume check's one item.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Agent, request } from 'undici';
import type { Fixture, ProbeResult } from '../fixture/index.ts';
import { freePort } from '../fixture/ports.ts';
import { openAdminSession } from '../support/admin-session.ts';
import { apiserverRequests } from '../support/apiserver-metrics.ts';
import { eventually } from '../support/eventually.ts';
import { startProbe } from '../support/informer-probe.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

/** Per key, event RVs strictly increase (a duplicate or a relist's replay breaks it). */
function outOfOrder(events: { key: string; rv: string; tombstone?: boolean }[]): string[] {
  const last = new Map<string, bigint>();
  const bad: string[] = [];
  for (const e of events) {
    if (e.tombstone || e.rv === '') continue;
    const rv = BigInt(e.rv);
    const prev = last.get(e.key);
    if (prev !== undefined && rv <= prev) bad.push(`${e.key}: rv ${rv} after ${prev}`);
    last.set(e.key, rv);
  }
  return bad;
}

/**
 * A raw watcher as client-go's reflector: lists once, then watches from the last RV it saw,
 * re-watching from it whenever a stream ends (the proxy going away included); a 410 is counted
 * (and would force a relist). Keeps every event, and its store.
 */
class ResumingWatcher {
  readonly events: { type: string; key: string; rv: string }[] = [];
  readonly store = new Map<string, string>();
  expired = 0;
  rv = '';
  #stopped = false;
  readonly #done: Promise<void>;
  readonly url: () => string;
  readonly ns: string;
  readonly auth: () => Record<string, string>;
  constructor(url: () => string, ns: string, auth: () => Record<string, string>) {
    this.url = url;
    this.ns = ns;
    this.auth = auth;
    this.#done = this.#run();
  }
  async #run(): Promise<void> {
    const list = await request(`${this.url()}/api/v1/namespaces/${this.ns}/configmaps`, {
      headers: this.auth(),
    });
    const l = (await list.body.json()) as {
      metadata: { resourceVersion: string };
      items: { metadata: { name: string; resourceVersion: string } }[];
    };
    for (const i of l.items) this.store.set(i.metadata.name, i.metadata.resourceVersion);
    this.rv = l.metadata.resourceVersion;
    while (!this.#stopped) {
      try {
        const r = await request(
          `${this.url()}/api/v1/namespaces/${this.ns}/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=30&resourceVersion=${this.rv}`,
          { headers: this.auth() },
        );
        let buf = '';
        for await (const c of r.body) {
          buf += c.toString();
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            const e = JSON.parse(buf.slice(0, i)) as {
              type: string;
              object: { metadata: { name?: string; resourceVersion?: string }; code?: number };
            };
            buf = buf.slice(i + 1);
            if (e.type === 'ERROR') {
              if (e.object.code === 410) this.expired++;
              continue;
            }
            const m = e.object.metadata;
            this.rv = m.resourceVersion ?? this.rv;
            if (e.type === 'BOOKMARK') continue;
            this.events.push({ type: e.type, key: m.name!, rv: m.resourceVersion! });
            if (e.type === 'DELETED') this.store.delete(m.name!);
            else this.store.set(m.name!, m.resourceVersion!);
          }
        }
      } catch {
        // The proxy is down: retry from the same RV.
        await new Promise((res) => setTimeout(res, 100));
      }
    }
  }
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#done.catch(() => {});
  }
}

describe('warm restart from a snapshot against the real apiserver', () => {
  let f: Fixture;
  let agent: Agent;
  let auth: Record<string, string>;
  before(async () => ({ f, agent, auth } = await openAdminSession()));
  after(() => agent.close());

  const api = (ns: string, name = '') =>
    `${f.server}/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;
  const write = async (method: string, ns: string, name: string, v = 0) => {
    const body = JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name },
      data: { v: String(v) },
    });
    const r = await request(method === 'POST' ? api(ns) : api(ns, name), {
      dispatcher: agent,
      method,
      headers: { ...auth, 'content-type': 'application/json' },
      ...(method === 'DELETE' ? {} : { body }),
    });
    assert.ok(r.statusCode < 300, `${method} ${name}: ${r.statusCode} ${await r.body.text()}`);
    await r.body.dump();
  };
  const direct = async (ns: string) => {
    const r = await request(api(ns), { dispatcher: agent, headers: auth });
    const l = (await r.body.json()) as { items: { metadata: { name: string; resourceVersion: string } }[] };
    return l.items.map((i) => `${ns}/${i.metadata.name}@${i.metadata.resourceVersion}`).sort();
  };

  test('creates, updates and deletes during the downtime arrive once, in order, for informers and raw watchers; no relist anywhere', async () => {
    const ns = await f.newNamespace('warm');
    const dir = await mkdtemp(join(f.dir, 'snapshots-'));
    const port = await freePort();
    const flags = {
      resources: 'configmaps',
      listen: `127.0.0.1:${port}`,
      args: ['--snapshot-dir', join(dir, 's'), '--snapshot-interval', '1s'],
    };
    for (let i = 0; i < 6; i++) await write('POST', ns, `c${i}`);
    let proxy: InProcessProxy = await startProxy(f, flags);
    const probes = [true, false].map((watchList) => ({
      name: `informer WatchListClient=${watchList}`,
      p: startProbe(f.bin.probe, {
        kubeconfig: proxy.kubeconfig,
        resource: 'configmaps',
        namespace: ns,
        untilStopped: true,
        watchList,
      }),
    }));
    const raw = new ResumingWatcher(
      () => proxy.url,
      ns,
      () => proxy.auth,
    );
    try {
      await Promise.all(probes.map((x) => x.p.synced));
      await write('PUT', ns, 'c0', 1);
      await eventually('the raw watcher saw c0@v1', 30_000, async () =>
        raw.events.length >= 1 ? true : undefined,
      );

      // SIGTERM's path: the last snapshot is written after the reflector stopped.
      await proxy.stop();
      await write('POST', ns, 'd0');
      await write('PUT', ns, 'c1', 1);
      await write('DELETE', ns, 'c2');
      await write('PUT', ns, 'c3', 1);
      await write('DELETE', ns, 'c3');

      const lists = () =>
        apiserverRequests(
          { server: f.server, dispatcher: agent, token: f.tokens.admin },
          { verb: 'LIST', resource: 'configmaps' },
        );
      const listsBefore = await lists();
      proxy = await startProxy(f, flags);
      const state = () => proxy.parts.statusSource.resources()[0]!;
      await eventually('live again', 30_000, async () => (state().live ? true : undefined));
      // Warm: no LIST or watch-list sync, one LIST of one item (the resume check) at the apiserver.
      assert.equal(state().lastSyncMode, null);
      assert.equal((await lists()) - listsBefore, 1);
      await write('POST', ns, 'e0');
      await write('PUT', ns, 'c4', 1);

      const want = await direct(ns);
      const key = (k: string, rv: string) => `${k}@${rv}`;
      await eventually('the raw watcher has the apiserver store', 60_000, async () =>
        JSON.stringify([...raw.store].map(([k, rv]) => key(`${ns}/${k}`, rv)).sort()) === JSON.stringify(want)
          ? true
          : undefined,
      );
      const results: { name: string; r: ProbeResult }[] = [];
      for (const x of probes) {
        await eventually(`${x.name} saw e0 and c4`, 60_000, async () =>
          x.p.events().some((e) => e.key === `${ns}/c4` && e.type === 'MODIFIED') ? true : undefined,
        );
        x.p.stop();
        results.push({ name: x.name, r: await x.p.done });
      }
      for (const { name, r } of results) {
        assert.deepEqual(r.store.map((i) => key(i.key, i.rv)).sort(), want, `${name}: store`);
        assert.deepEqual(outOfOrder(r.events), [], `${name}: each event once, in RV order`);
        const after = r.events.filter((e) => !e.initial).map((e) => `${e.type} ${e.key.split('/')[1]}`);
        assert.deepEqual(
          after,
          [
            'MODIFIED c0',
            'ADDED d0',
            'MODIFIED c1',
            'DELETED c2',
            'MODIFIED c3',
            'DELETED c3',
            'ADDED e0',
            'MODIFIED c4',
          ],
          `${name}: the changes, once each, in order`,
        );
      }
      assert.equal(raw.expired, 0, 'no 410 for the raw watcher');
      assert.deepEqual(outOfOrder(raw.events.map((e) => ({ key: e.key, rv: e.rv }))), []);
      assert.deepEqual(
        raw.events.map((e) => `${e.type} ${e.key}`),
        [
          'MODIFIED c0',
          'ADDED d0',
          'MODIFIED c1',
          'DELETED c2',
          'MODIFIED c3',
          'DELETED c3',
          'ADDED e0',
          'MODIFIED c4',
        ],
      );
      // The restarted proxy: no relist.
      assert.deepEqual(state().relists, {});
    } finally {
      await raw.stop();
      for (const x of probes) x.p.stop();
      await proxy.stop();
    }
  });
});
