/**
 * The whole proxy (config → createParts → runProxy, test/support/proxy.ts) in front of a scripted fake upstream
 * (test/support/fake-upstream.ts), for exact sequences the real apiserver cannot be made to produce
 * on demand: RVs of deletes and label-selector transitions as a client sees them, a bookmark
 * then a resume with no phantom event, the upstream's own bookmark bytes, and a relist (410 →
 * new snapshot) that ends clients' watches cleanly and makes the old RV 410.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { request } from 'undici';
import type { ProxyParts, RunningProxy } from '../../src/main.ts';
import { until } from '../support/eventually.ts';
import {
  configMap,
  type FakeUpstream,
  type ScriptedWatch,
  startFakeUpstream,
} from '../support/fake-upstream.ts';
import { runProxyInProcess } from '../support/proxy.ts';

const END = '"annotations":{"k8s.io/initial-events-end":"true"}';
/** Bookmark objects in a shape the proxy's defaults do not produce (an older apiserver's). */
const endBookmark = (rv: number) =>
  `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"${rv}","creationTimestamp":null,${END}}}`;
const plainBookmark = (rv: number) =>
  `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"${rv}","creationTimestamp":null}}`;

interface Line {
  type: string;
  name: string;
  rv: string;
  x?: string;
  raw: string;
}

/** A client watch through the proxy, read line by line. */
class ClientWatch {
  readonly lines: Line[] = [];
  ended = false;
  error: unknown;
  #wake: (() => void) | undefined;
  readonly done: Promise<void>;
  readonly status: Promise<number>;
  constructor(url: string) {
    let setStatus: (n: number) => void = () => {};
    this.status = new Promise((res) => {
      setStatus = res;
    });
    this.done = (async () => {
      try {
        const r = await request(url, { headers: { authorization: 'Bearer client' } });
        setStatus(r.statusCode);
        let buf = '';
        for await (const c of r.body) {
          buf += c.toString();
          let i = buf.indexOf('\n');
          while (i >= 0) {
            const raw = buf.slice(0, i);
            buf = buf.slice(i + 1);
            i = buf.indexOf('\n');
            const ev = JSON.parse(raw) as {
              type: string;
              object: {
                metadata: { name?: string; resourceVersion?: string; labels?: Record<string, string> };
              };
            };
            const m = ev.object.metadata;
            const l: Line = { type: ev.type, name: m.name ?? '', rv: m.resourceVersion ?? '', raw };
            if (m.labels?.x !== undefined) l.x = m.labels.x;
            this.lines.push(l);
            this.#wake?.();
          }
        }
        this.ended = true;
      } catch (err) {
        this.error = err;
      } finally {
        this.#wake?.();
      }
    })();
  }
  /** Waits until `n` lines arrived (or the stream ended); bounded. */
  async waitFor(n: number, timeoutMs = 10_000): Promise<Line[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.lines.length < n && !this.ended && this.error === undefined) {
      if (Date.now() > deadline) throw new Error(`timed out with ${JSON.stringify(this.lines)}`);
      await new Promise<void>((res) => {
        this.#wake = res;
        setTimeout(res, 100);
      });
    }
    return this.lines;
  }
}

const brief = (ls: Line[]) =>
  ls.map((l) => `${l.type} ${l.name}@${l.rv}${l.x !== undefined ? ` x=${l.x}` : ''}`);

describe('the proxy in front of a scripted upstream', () => {
  let up: FakeUpstream;
  let dir: string;
  let proxy: RunningProxy | undefined;
  let parts: ProxyParts;
  let w0: ScriptedWatch;
  const base = () => `${proxy?.address}/api/v1/namespaces/ns/configmaps`;
  const watchers = () => parts.statusSource.resources()[0]?.watchers ?? -1;
  const start = async (extraArgs: string[]) => {
    up = await startFakeUpstream();
    dir = await mkdtemp(join(tmpdir(), 'kcp-int-'));
    const kubeconfig = await up.writeKubeconfig(join(dir, 'kubeconfig'));
    proxy = undefined;
    ({ parts, proxy } = await runProxyInProcess([
      '--kubeconfig',
      kubeconfig,
      '--resources',
      'configmaps',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
      ...extraArgs,
    ]));
    // The reflector's watch-list: a@10 b@11 (x=1), c@12 (x=2), end bookmark at 20.
    w0 = await up.nextWatch();
    assert.equal(w0.query.get('sendInitialEvents'), 'true');
    assert.equal(w0.query.get('allowWatchBookmarks'), 'true');
    w0.send('ADDED', configMap('a', 10, { x: '1' }));
    w0.send('ADDED', configMap('b', 11, { x: '1' }));
    w0.send('ADDED', configMap('c', 12, { x: '2' }));
    w0.send('BOOKMARK', endBookmark(20));
    await until('synced', () => parts.statusSource.resources()[0]?.synced === true);
  };
  beforeEach(async (t) => {
    // --namespace ns: the reflector watches /api/v1/namespaces/ns/configmaps instead.
    await start(t.name.includes('--namespace') ? ['--namespace', 'ns'] : []);
  });
  afterEach(async () => {
    await proxy?.stop();
    await up?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('--namespace: the reflector lists and watches that namespace only; other namespaces pass upstream', async () => {
    assert.equal(w0.path, '/api/v1/namespaces/ns/configmaps');
    const l = await request(base(), { headers: { authorization: 'Bearer client' } });
    const list = (await l.body.json()) as { metadata: { resourceVersion: string }; items: unknown[] };
    assert.equal(l.statusCode, 200);
    assert.equal(list.metadata.resourceVersion, '20');
    assert.equal(list.items.length, 3);
    const n = up.requests.length;
    const o = await request(`${proxy?.address}/api/v1/namespaces/other/configmaps`, {
      headers: { authorization: 'Bearer client' },
    });
    await o.body.dump();
    assert.equal(o.statusCode, 404, 'the fake upstream answered');
    assert.deepEqual(up.requests.slice(n), ['GET /api/v1/namespaces/other/configmaps']);
  });

  test("an uncached watch passes through on the long-running pool with the upstream's answer", async () => {
    const r = await request(`${proxy?.address}/api/v1/namespaces/ns/secrets?watch=1`, {
      headers: { authorization: 'Bearer client' },
    });
    assert.equal(r.statusCode, 404);
    assert.equal(
      ((await r.body.json()) as { message: string }).message,
      'the server could not find the requested resource (GET /api/v1/namespaces/ns/secrets)',
    );
    assert.ok(up.requests.includes('GET /api/v1/namespaces/ns/secrets?watch=1'), up.requests.join('\n'));
  });

  test('deletes and label-selector transitions: exact events and RVs as clients see them', async () => {
    const sel = new ClientWatch(`${base()}?watch=1&resourceVersion=20&labelSelector=x%3D1&timeoutSeconds=30`);
    const all = new ClientWatch(`${base()}?watch=1&resourceVersion=20&timeoutSeconds=30`);
    await until('2 watchers', () => watchers() === 2);
    w0.send('MODIFIED', configMap('a', 21, { x: '2' })); // a leaves x=1
    w0.send('MODIFIED', configMap('c', 22, { x: '1' })); // c enters x=1
    w0.send('DELETED', configMap('b', 23, { x: '1' }));
    w0.send('MODIFIED', configMap('a', 24, { x: '3' })); // outside x=1 before and after
    w0.send('DELETED', configMap('c', 25, { x: '1' }));
    assert.deepEqual(brief(await all.waitFor(5)), [
      'MODIFIED a@21 x=2',
      'MODIFIED c@22 x=1',
      'DELETED b@23 x=1',
      'MODIFIED a@24 x=3',
      'DELETED c@25 x=1',
    ]);
    // apiserver cache_watcher.go convertToWatchEvent: leaving the selector is a DELETED of the
    // previous object with the event's RV; entering it an ADDED of the new one.
    assert.deepEqual(brief(await sel.waitFor(4)), [
      'DELETED a@21 x=1',
      'ADDED c@22 x=1',
      'DELETED b@23 x=1',
      'DELETED c@25 x=1',
    ]);
    // Nothing else follows: a sentinel arrives next on both.
    w0.send('ADDED', configMap('s', 26, { x: '1' }));
    assert.deepEqual(brief((await all.waitFor(6)).slice(5)), ['ADDED s@26 x=1']);
    assert.deepEqual(brief((await sel.waitFor(5)).slice(4)), ['ADDED s@26 x=1']);
  });

  test("a bookmark, then a resume from its RV: no phantom events; bookmarks keep the upstream's bytes", async () => {
    // timeoutSeconds=3: the cache sends a bookmark 2 s before the deadline, then ends the watch.
    const first = new ClientWatch(
      `${base()}?watch=1&resourceVersion=20&allowWatchBookmarks=true&timeoutSeconds=3`,
    );
    await until('watcher', () => watchers() === 1);
    w0.send('BOOKMARK', plainBookmark(30)); // progress upstream, no change
    await first.done;
    assert.equal(first.error, undefined);
    assert.deepEqual(
      first.lines.map((l) => l.raw),
      [`{"type":"BOOKMARK","object":${plainBookmark(30)}}`],
    );
    const resumed = new ClientWatch(
      `${base()}?watch=1&resourceVersion=30&allowWatchBookmarks=true&timeoutSeconds=30`,
    );
    await until('watcher', () => watchers() === 1);
    w0.send('MODIFIED', configMap('a', 31, { x: '1' }));
    w0.send('MODIFIED', configMap('a', 32, { x: '1' }));
    assert.deepEqual(brief(await resumed.waitFor(2)), ['MODIFIED a@31 x=1', 'MODIFIED a@32 x=1']);
    // A watch-list client's initial-events-end bookmark has the upstream's shape too.
    const wl = new ClientWatch(
      `${base()}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=30`,
    );
    const got = await wl.waitFor(4);
    assert.deepEqual(brief(got.slice(0, 3)), ['ADDED a@32 x=1', 'ADDED b@11 x=1', 'ADDED c@12 x=2']);
    assert.equal(got[3]?.raw, `{"type":"BOOKMARK","object":${endBookmark(32)}}`);
  });

  test('a relist (upstream 410, new snapshot) ends client watches cleanly; resuming from the old RV gets 410', async () => {
    const c = new ClientWatch(`${base()}?watch=1&resourceVersion=20&timeoutSeconds=30`);
    await until('watcher', () => watchers() === 1);
    w0.send('MODIFIED', configMap('a', 21, { x: '1' }));
    assert.deepEqual(brief(await c.waitFor(1)), ['MODIFIED a@21 x=1']);
    w0.error(410, 'Expired', 'too old resource version: 21 (50)');
    // The reflector relists with a fresh watch-list (RV "" after a 410, as client-go).
    let w1 = await up.nextWatch();
    if ((w1.query.get('resourceVersion') ?? '') !== '') {
      w1.error(410, 'Expired', 'too old resource version: 21 (50)');
      w1 = await up.nextWatch();
    }
    assert.equal(w1.query.get('sendInitialEvents'), 'true');
    assert.equal(w1.query.get('resourceVersion') ?? '', '');
    w1.send('ADDED', configMap('a', 60, { x: '1' }));
    w1.send('ADDED', configMap('d', 61, { x: '1' }));
    w1.send('BOOKMARK', endBookmark(70));
    await c.done;
    assert.equal(c.error, undefined, 'ended cleanly, not reset');
    assert.equal(c.ended, true);
    assert.deepEqual(brief(c.lines), ['MODIFIED a@21 x=1']);
    const resume = new ClientWatch(`${base()}?watch=1&resourceVersion=21&timeoutSeconds=30`);
    await resume.done;
    assert.equal(await resume.status, 200);
    assert.equal(resume.lines.length, 1);
    assert.deepEqual(JSON.parse(resume.lines[0]!.raw), {
      type: 'ERROR',
      object: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'too old resource version: 21 (70)',
        reason: 'Expired',
        code: 410,
      },
    });
    const l = await request(base(), { headers: { authorization: 'Bearer client' } });
    const list = (await l.body.json()) as {
      metadata: { resourceVersion: string };
      items: { metadata: { name: string } }[];
    };
    assert.equal(list.metadata.resourceVersion, '70');
    assert.deepEqual(
      list.items.map((o) => o.metadata.name),
      ['a', 'd'],
    );
  });
});
