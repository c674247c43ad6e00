/**
 * Warm restart from a snapshot (`--snapshot-dir`, docs/design.md §3) in front of a scripted
 * upstream (test/support/fake-upstream.ts), for the exact request sequences: a restarted proxy
 * resumes its upstream watch from the snapshot's RV without listing, serves the snapshot until
 * then, and lets a client resume from an RV it got before the restart; a 410 on the resumed watch
 * relists; a snapshot RV ahead of the upstream's is refused and relisted; a start with the
 * upstream down serves the snapshot and says so on /readyz.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { request } from 'undici';
import type { RunningProxy } from '../../src/main.ts';
import type { ResourceState } from '../../src/resources/resource-state.ts';
import { until } from '../support/eventually.ts';
import { configMap, type FakeUpstream, startFakeUpstream } from '../support/fake-upstream.ts';
import { runProxyInProcess } from '../support/proxy.ts';

const END = '"annotations":{"k8s.io/initial-events-end":"true"}';
const endBookmark = (rv: number) =>
  `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"${rv}","creationTimestamp":null,${END}}}`;

/** The upstream: kube-system's UID and, for the resume check's LIST of one item, `current` as its RV. */
function upstreamState(up: FakeUpstream, s: { uid: string; current: number }): void {
  up.answer = (_req: IncomingMessage, url: URL, res: ServerResponse) => {
    if (url.pathname === '/api/v1/namespaces/kube-system') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Namespace',
          apiVersion: 'v1',
          metadata: { name: 'kube-system', uid: s.uid },
        }),
      );
      return true;
    }
    if (url.pathname === '/api/v1/configmaps' && url.searchParams.get('limit') === '1') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'ConfigMapList',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(s.current) },
          items: [],
        }),
      );
      return true;
    }
    return false;
  };
}

/** GET with a token of the proxy's identity: `client` (reviewed upstream) or `fake` (the proxy's own, known without the upstream). */
async function get(url: string, token = 'client'): Promise<{ status: number; body: string }> {
  const r = await request(url, { headers: { authorization: `Bearer ${token}` } });
  return { status: r.statusCode, body: await r.body.text() };
}

const items = (body: string) =>
  (JSON.parse(body) as { items: { metadata: { name: string; resourceVersion: string } }[] }).items.map(
    (i) => `${i.metadata.name}@${i.metadata.resourceVersion}`,
  );

/** A whole watch answer (the proxy ends it at `timeoutSeconds`), as `TYPE name@rv` lines. */
async function watchLines(url: string, token = 'client'): Promise<string[]> {
  const { body } = await get(url, token);
  return body
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const e = JSON.parse(l) as {
        type: string;
        object: { metadata: { name?: string; resourceVersion: string } };
      };
      return `${e.type} ${e.object.metadata.name ?? ''}@${e.object.metadata.resourceVersion}`;
    });
}

describe('warm restart from a snapshot, scripted upstream', () => {
  const running: RunningProxy[] = [];
  const ups: FakeUpstream[] = [];
  afterEach(async () => {
    for (const p of running.splice(0)) await p.stop();
    for (const u of ups.splice(0)) await u.close();
  });

  async function proxyOn(up: FakeUpstream, dir: string, kubeconfig?: string) {
    const { parts, proxy } = await runProxyInProcess([
      '--kubeconfig',
      kubeconfig ?? (await up.writeKubeconfig(join(dir, 'kubeconfig'))),
      '--resources',
      'configmaps',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
      '--snapshot-dir',
      join(dir, 'snapshots'),
    ]);
    running.push(proxy);
    const state = (): ResourceState => parts.statusSource.resources()[0]!;
    return {
      proxy,
      state,
      stop: async () => {
        running.splice(running.indexOf(proxy), 1);
        await proxy.stop();
      },
    };
  }

  /** A first proxy synced at 20 (a@10, b@11), then b@21 live, stopped: its snapshot is at 21. */
  async function firstRun(s: { uid: string; current: number }) {
    const up = await startFakeUpstream();
    ups.push(up);
    upstreamState(up, s);
    const dir = await mkdtemp(join(tmpdir(), 'kcp-warm-'));
    const p = await proxyOn(up, dir);
    const w = await up.nextWatch();
    w.send('ADDED', configMap('a', 10));
    w.send('ADDED', configMap('b', 11));
    w.send('BOOKMARK', endBookmark(20));
    await until('synced', () => p.state().synced);
    w.send('MODIFIED', configMap('b', 21, { v: '2' }));
    await until('b@21', () => p.state().resourceVersion === '21');
    await p.stop();
    assert.deepEqual(await readdir(join(dir, 'snapshots')), ['configmaps.snap']);
    up.requests.length = 0;
    return { up, dir };
  }

  test('resumes the upstream watch from the snapshot RV without a LIST; a client resumes from an RV it got before the restart', async () => {
    const { up, dir } = await firstRun({ uid: 'ks-1', current: 25 });
    up.holdWatches = true;
    const p = await proxyOn(up, dir);
    const base = `${p.proxy.address}/api/v1/namespaces/ns/configmaps`;
    // Before the upstream accepted the resumed watch: served from the snapshot, not live.
    const w = await up.nextWatch();
    assert.equal(w.query.get('resourceVersion'), '21');
    assert.equal(w.query.get('sendInitialEvents'), null);
    const early = await get(`${base}?resourceVersion=0`);
    assert.equal(early.status, 200);
    assert.deepEqual(items(early.body), ['a@10', 'b@21']);
    assert.notEqual(p.state().restoredFromMs, null);
    assert.equal(p.state().live, false);
    const ready = await get(`${(p.proxy as unknown as { opsAddress: string }).opsAddress}/readyz?verbose`);
    assert.equal(ready.status, 200);
    assert.match(
      ready.body,
      /\[\+\]cache-sync\/configmaps ok \(served from a snapshot taken \d+s ago, not live\)/,
    );
    // Accepted is not proven (an ERROR 410 may follow in the stream); its first event is.
    w.accept();
    await until('accepted', () => up.requests.length === 3);
    assert.equal(p.state().live, false);
    assert.equal((await get(base)).status, 404); // RV="": upstream (the fake has no LIST), not the snapshot
    w.send('ADDED', configMap('c', 22));
    await until('live', () => p.state().live);
    assert.equal(p.state().restoredFromMs, null);
    await until('c@22', () => p.state().resourceVersion === '22');
    // The only upstream requests: the identity, the resume check's LIST of one item, the watch
    // (and the client's RV="" LIST passed upstream).
    assert.deepEqual(
      up.requests.map((r) => r.replace(/\?.*/, '')),
      [
        'GET /api/v1/namespaces/kube-system',
        'GET /api/v1/configmaps',
        'GET /api/v1/configmaps',
        'GET /api/v1/namespaces/ns/configmaps',
      ],
    );
    assert.match(up.requests[1]!, /limit=1/);
    assert.deepEqual(p.state().relists, {});
    // A client that had RV 20 before the restart: every event after it once, in order, no 410.
    assert.deepEqual(await watchLines(`${base}?watch=1&resourceVersion=20&timeoutSeconds=1`), [
      'MODIFIED b@21',
      'ADDED c@22',
    ]);
    // A watch-list client gets its initial-events-end bookmark.
    const wl = await watchLines(
      `${base}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1`,
    );
    assert.deepEqual(wl.slice(0, 4), ['ADDED a@10', 'ADDED b@21', 'ADDED c@22', 'BOOKMARK @22']);
  });

  test('a 410 on the resumed watch relists (reason expired); clients resuming below the new window get 410', async () => {
    const { up, dir } = await firstRun({ uid: 'ks-1', current: 40 });
    const p = await proxyOn(up, dir);
    const base = `${p.proxy.address}/api/v1/namespaces/ns/configmaps`;
    const w = await up.nextWatch();
    assert.equal(w.query.get('resourceVersion'), '21');
    w.error(410, 'Expired', 'too old resource version: 21 (35)');
    const relist = await up.nextWatch();
    assert.equal(relist.query.get('sendInitialEvents'), 'true');
    relist.send('ADDED', configMap('a', 10));
    relist.send('ADDED', configMap('d', 36));
    relist.send('BOOKMARK', endBookmark(40));
    await until('relisted', () => p.state().resourceVersion === '40');
    assert.deepEqual(p.state().relists, { expired: 1 });
    assert.deepEqual(items((await get(`${base}?resourceVersion=0`)).body), ['a@10', 'd@36']);
    const old = await watchLines(`${base}?watch=1&resourceVersion=20&timeoutSeconds=1`);
    assert.equal(old.length, 1);
    assert.match(old[0]!, /^ERROR/);
  });

  test('a resumed watch accepted, then ERROR 410 in its stream (an etcd-served watch): never live from the snapshot; relisted', async () => {
    const { up, dir } = await firstRun({ uid: 'ks-1', current: 40 });
    up.holdWatches = true;
    const p = await proxyOn(up, dir);
    const base = `${p.proxy.address}/api/v1/namespaces/ns/configmaps`;
    let everLive = false;
    const watchLive = setInterval(() => {
      everLive ||= p.state().live;
    }, 1);
    const w = await up.nextWatch();
    try {
      assert.equal(w.query.get('resourceVersion'), '21');
      w.accept();
      await until('accepted', () => up.requests.length === 3);
      // RV="" is not answered from the snapshot while the stream has delivered nothing.
      for (let i = 0; i < 5; i++) assert.equal((await get(base)).status, 404);
    } finally {
      clearInterval(watchLive);
    }
    assert.equal(everLive, false, 'live from the snapshot before the stream delivered anything');
    w.error(410, 'Expired', 'The resourceVersion for the provided watch is too old.');
    up.holdWatches = false;
    const relist = await up.nextWatch();
    assert.equal(relist.query.get('sendInitialEvents'), 'true');
    relist.send('ADDED', configMap('a', 10));
    relist.send('BOOKMARK', endBookmark(40));
    await until('relisted', () => p.state().resourceVersion === '40');
    assert.deepEqual(p.state().relists, { expired: 1 });
    assert.deepEqual(items((await get(`${base}?resourceVersion=0`)).body), ['a@10']);
  });

  test('a snapshot RV ahead of the upstream (etcd restored from a backup) is refused, deleted and relisted', async () => {
    const s = { uid: 'ks-1', current: 50 };
    const { up, dir } = await firstRun(s);
    s.current = 15;
    const p = await proxyOn(up, dir);
    const w = await up.nextWatch();
    assert.equal(w.query.get('sendInitialEvents'), 'true');
    assert.notEqual(w.query.get('resourceVersion'), '21');
    w.send('ADDED', configMap('a', 10));
    w.send('BOOKMARK', endBookmark(15));
    await until('relisted', () => p.state().resourceVersion === '15');
    assert.deepEqual(p.state().relists, { snapshot_refused: 1 });
    assert.deepEqual(
      items((await get(`${p.proxy.address}/api/v1/namespaces/ns/configmaps?resourceVersion=0`)).body),
      ['a@10'],
    );
  });

  test('a snapshot of another cluster at the same URL (kube-system UID) is refused and relisted', async () => {
    const s = { uid: 'ks-1', current: 50 };
    const { up, dir } = await firstRun(s);
    s.uid = 'ks-2';
    const p = await proxyOn(up, dir);
    const w = await up.nextWatch();
    assert.equal(w.query.get('sendInitialEvents'), 'true');
    w.send('BOOKMARK', endBookmark(30));
    await until('listed', () => p.state().resourceVersion === '30');
    // Refused when loaded (the UID is asked before anything is served): a cold start, not a
    // snapshot resumed and then refused.
    assert.deepEqual(p.state().relists, {});
    assert.deepEqual(
      items((await get(`${p.proxy.address}/api/v1/namespaces/ns/configmaps?resourceVersion=0`)).body),
      [],
    );
  });

  test('started with the upstream down: serves the snapshot to the proxy token (ready, named on /readyz); consistent reads stay upstream (503)', async () => {
    const { up, dir } = await firstRun({ uid: 'ks-1', current: 25 });
    const kubeconfig = join(dir, 'kubeconfig');
    await up.close();
    ups.splice(ups.indexOf(up), 1);
    const p = await proxyOn(up, dir, kubeconfig);
    const base = `${p.proxy.address}/api/v1/namespaces/ns/configmaps`;
    await until('restored', () => p.state().synced);
    // The sidecar's clients present the proxy's own token: known without the upstream.
    assert.deepEqual(items((await get(`${base}?resourceVersion=0`, 'fake')).body), ['a@10', 'b@21']);
    assert.deepEqual(await watchLines(`${base}?watch=1&resourceVersion=20&timeoutSeconds=1`, 'fake'), [
      'MODIFIED b@21',
    ]);
    const ready = await get(
      `${(p.proxy as unknown as { opsAddress: string }).opsAddress}/readyz/cache-sync/configmaps`,
    );
    assert.equal(ready.status, 200);
    // A consistent read is the upstream's (down): not answered from the snapshot.
    assert.equal((await get(base, 'fake')).status, 503);
    assert.notEqual(p.state().restoredFromMs, null);
  });
});
