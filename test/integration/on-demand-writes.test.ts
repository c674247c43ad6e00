/**
 * Read-your-writes while an on-demand cache starts (`--resources=auto`), against a scripted
 * upstream (test/support/fake-upstream.ts) that holds each step until the test lets it go: a
 * PATCH sent before the cache exists, answered after the cache's first snapshot (which lacks the
 * PATCH), must not let the GET right after it be answered from that snapshot.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import type { ProxyParts, RunningProxy } from '../../src/main.ts';
import { until } from '../support/eventually.ts';
import { configMap, type FakeUpstream, startFakeUpstream } from '../support/fake-upstream.ts';
import { runProxyInProcess } from '../support/proxy.ts';

const END = '"annotations":{"k8s.io/initial-events-end":"true"}';
const endBookmark = (rv: number) =>
  `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"${rv}","creationTimestamp":null,${END}}}`;
/** ConfigMap `a` at `rv` with `data.v`. */
const objectA = (rv: number, v: string) => ({ ...configMap('a', rv), data: { v } });

const json = (res: ServerResponse, code: number, body: unknown) => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

describe('issue 28: a write answered while an on-demand cache starts is tracked for read-your-writes', () => {
  let up: FakeUpstream;
  let dir: string;
  let proxy: RunningProxy;
  let parts: ProxyParts;
  /** What the upstream holds: the proxy's SelfSubjectAccessReviews and the client's PATCH. */
  let holdReviews = true;
  const heldReviews: (() => void)[] = [];
  let heldPatch: ((body: unknown) => void) | undefined;
  /** The upstream's current `a` (what a GET passed upstream is answered). */
  let current = objectA(10, 'old');

  before(async () => {
    up = await startFakeUpstream((req: IncomingMessage, url: URL, res: ServerResponse) => {
      if (
        req.method === 'POST' &&
        url.pathname === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews'
      ) {
        const allow = () => json(res, 201, { kind: 'SelfSubjectAccessReview', status: { allowed: true } });
        req.resume();
        if (holdReviews) heldReviews.push(allow);
        else allow();
        return true;
      }
      if (
        url.pathname === '/api/v1/namespaces/ns/configmaps' &&
        req.method === 'GET' &&
        !url.searchParams.has('watch')
      ) {
        json(res, 200, {
          kind: 'ConfigMapList',
          apiVersion: 'v1',
          metadata: { resourceVersion: '20' },
          items: [current],
        });
        return true;
      }
      if (url.pathname === '/api/v1/namespaces/ns/configmaps/a' && req.method === 'PATCH') {
        req.resume();
        heldPatch = (body) => json(res, 200, body);
        return true;
      }
      if (url.pathname === '/api/v1/namespaces/ns/configmaps/a' && req.method === 'GET') {
        json(res, 200, current);
        return true;
      }
      return false;
    });
    dir = await mkdtemp(join(tmpdir(), 'kcp-ondemand-writes-'));
    const kubeconfig = await up.writeKubeconfig(join(dir, 'kubeconfig'));
    ({ parts, proxy } = await runProxyInProcess([
      '--kubeconfig',
      kubeconfig,
      '--resources',
      'auto',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
    ]));
  });
  after(async () => {
    await proxy?.stop();
    await up?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('PATCH sent before the cache exists, answered after its first snapshot: the GET right after it shows the PATCH, never the snapshot', async () => {
    const base = `${proxy.address}/api/v1/namespaces/ns/configmaps`;
    const headers = { authorization: 'Bearer client', 'content-type': 'application/merge-patch+json' };
    const cached = () => parts.statusSource.resources().find((r) => r.gvr.resource === 'configmaps');
    // 1. The first LIST passes upstream (not-cached) and starts the on-demand cache's checks,
    //    which wait at the upstream (its SelfSubjectAccessReviews are held).
    const list = await request(base, { headers });
    assert.equal(list.statusCode, 200);
    await list.body.dump();
    await until('the on-demand review asked', () => heldReviews.length > 0);
    assert.equal(cached(), undefined, 'no cache yet');
    // 2. The PATCH is sent while no cache serves configmaps; the upstream holds its answer.
    const patch = request(`${base}/a`, { method: 'PATCH', headers, body: '{"data":{"v":"new"}}' });
    await until('the PATCH at the upstream', () => heldPatch !== undefined);
    // 3. The cache starts: reviews allowed, its watch-list's snapshot is taken before the PATCH
    //    (a at 10, RV 20), and it syncs.
    holdReviews = false;
    for (const allow of heldReviews.splice(0)) allow();
    const w = await up.nextWatch();
    assert.equal(w.query.get('sendInitialEvents'), 'true');
    w.send('ADDED', objectA(10, 'old'));
    w.send('BOOKMARK', endBookmark(20));
    await until('the cache synced', () => cached()?.synced === true);
    // 4. The PATCH is done upstream (a at 30) and answered; its event has not reached the cache.
    current = objectA(30, 'new');
    heldPatch!(current);
    const patched = await patch;
    assert.equal(patched.statusCode, 200);
    assert.equal(
      ((await patched.body.json()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
      '30',
    );
    // 5. The GET right after: the cache (at 20, a at 10) must not answer it. It waits for RV 30,
    //    which never comes here, and passes upstream (write-pending).
    const upstreamGets = () =>
      up.requests.filter((r) => r === 'GET /api/v1/namespaces/ns/configmaps/a').length;
    const get = async () => {
      const r = await request(`${base}/a`, { headers });
      assert.equal(r.statusCode, 200);
      const o = (await r.body.json()) as { metadata: { resourceVersion: string }; data: { v: string } };
      return `${o.metadata.resourceVersion} ${o.data.v}`;
    };
    assert.equal(await get(), '30 new', 'the PATCH is seen, not the snapshot before it');
    assert.equal(upstreamGets(), 1, 'passed upstream: the cache had not reached the PATCH');
    // 6. Its event arrives: from now on the cache answers, with the PATCH.
    w.send('MODIFIED', objectA(30, 'new'));
    await until('the cache at 30', () => cached()?.resourceVersion === '30');
    assert.equal(await get(), '30 new');
    assert.equal(upstreamGets(), 1, 'served from the cache');
  });
});
