/**
 * The proxy follows what its reflector observed of the upstream (issue 11), against a scripted
 * upstream (test/support/fake-upstream.ts): an apiserver with the WatchList feature gate off
 * (item 8), and a resource whose resourceVersions do not parse as uint64 (item 9).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { request } from 'undici';
import type { ProxyParts, RunningProxy } from '../../src/main.ts';
import { until } from '../support/eventually.ts';
import {
  configMap,
  type FakeUpstream,
  type Intercept,
  startFakeUpstream,
  writeStatus,
} from '../support/fake-upstream.ts';
import { runProxyInProcess } from '../support/proxy.ts';

/** kube-apiserver v1.37 with `--feature-gates=WatchList=false`, for any watch with sendInitialEvents. */
const GATE_OFF =
  'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled';

const auth = { authorization: 'Bearer client' };

/** A LIST answer of configmaps at `rv` (items without kind/apiVersion, as the apiserver writes them). */
const listAnswer = (rv: string, items: Record<string, unknown>[]): Intercept => {
  return (req, url, res) => {
    if (!/\/configmaps$/.test(url.pathname) || url.searchParams.has('watch')) return false;
    if (req.headers.authorization !== 'Bearer fake') return false;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        kind: 'ConfigMapList',
        apiVersion: 'v1',
        metadata: { resourceVersion: rv },
        items: items.map(({ kind: _k, apiVersion: _a, ...rest }) => rest),
      }),
    );
    return true;
  };
};

describe('issue 11: the proxy follows what the upstream supports', () => {
  let up: FakeUpstream | undefined;
  let dir: string | undefined;
  let proxy: RunningProxy | undefined;
  let parts: ProxyParts;

  const start = async (intercept: Intercept) => {
    up = await startFakeUpstream(intercept);
    dir = await mkdtemp(join(tmpdir(), 'kcp-int-'));
    const kubeconfig = await up.writeKubeconfig(join(dir, 'kubeconfig'));
    ({ parts, proxy } = await runProxyInProcess([
      '--kubeconfig',
      kubeconfig,
      '--resources',
      'configmaps',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
    ]));
  };
  afterEach(async () => {
    await proxy?.stop();
    await up?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
    proxy = undefined;
    up = undefined;
  });

  test('issue 11 item 8: WatchList gate off upstream: sendInitialEvents gets its 422 through the proxy too', async () => {
    const list = listAnswer('20', [configMap('a', 10)]);
    await start((req, url, res) => {
      if (url.searchParams.has('sendInitialEvents')) {
        writeStatus(res, 422, 'Invalid', GATE_OFF);
        return true;
      }
      return list(req, url, res);
    });
    // The reflector: watch-list refused (422) → LIST at 20 → WATCH from 20.
    const w = await up!.nextWatch();
    assert.equal(w.query.get('resourceVersion'), '20');
    assert.equal(w.query.has('sendInitialEvents'), false);
    await until('synced', () => parts.statusSource.resources()[0]?.synced === true);
    const base = `${proxy!.address}/api/v1/namespaces/ns/configmaps`;
    for (const q of [
      '?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2',
      // The real apiserver with the gate off answers 422 for sendInitialEvents=false as well.
      '?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&timeoutSeconds=2',
    ]) {
      const r = await request(base + q, { headers: auth });
      const body = JSON.parse(await r.body.text()) as { message: string; code: number };
      assert.equal(r.statusCode, 422, `${q}: ${JSON.stringify(body)}`);
      assert.equal(body.message, GATE_OFF);
    }
    // A plain watch at RV=0 is not defaulted to a watch-list: ADDED, no initial-events-end.
    const r = await request(`${base}?watch=1&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=3`, {
      headers: auth,
    });
    assert.equal(r.statusCode, 200);
    const lines = (await r.body.text()).split('\n').filter((l) => l !== '');
    assert.equal(JSON.parse(lines[0]!).type, 'ADDED');
    assert.ok(
      lines.every((l) => !l.includes('k8s.io/initial-events-end')),
      `no initial-events-end bookmark: ${lines.join('\n')}`,
    );
  });

  test('issue 11 item 9: resourceVersions that do not parse: detected once, pass-through only, /readyz green', async () => {
    const bad = {
      ...configMap('a', 1),
      metadata: { ...(configMap('a', 1).metadata as object), resourceVersion: 'x10' },
    };
    await start(listAnswer('x20', [bad]));
    const w = await up!.nextWatch();
    w.send('ADDED', bad);
    w.send(
      'BOOKMARK',
      '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"x20","annotations":{"k8s.io/initial-events-end":"true"}}}',
    );
    await until(
      'phase pass-through',
      () => parts.statusSource.resources()[0]?.phase === 'pass-through',
      5_000,
    );
    const st = parts.statusSource.resources()[0]!;
    assert.equal(st.synced, false);
    assert.match(st.lastError ?? '', /not a|uint64/i);
    const ready = await request(`${proxy!.opsAddress}/readyz?verbose`);
    assert.equal(ready.statusCode, 200, await ready.body.text());
    const dbg = (await (await request(`${proxy!.opsAddress}/debug/cache`)).body.json()) as {
      ready: boolean;
      resources: { phase: string; lastError: string }[];
    };
    assert.equal(dbg.resources[0]?.phase, 'pass-through');
    assert.match(dbg.resources[0]?.lastError ?? '', /x20|x10/);
    assert.equal(dbg.ready, true);
    // Requests go upstream at once: no wait for a sync that never comes (which would count the
    // request with reason not-synced, after syncWaitMs).
    const n = up!.requests.length;
    const l = await request(`${proxy!.address}/api/v1/namespaces/ns/configmaps`, {
      headers: { authorization: 'Bearer fake' },
    });
    const body = (await l.body.json()) as { metadata: { resourceVersion: string } };
    assert.equal(l.statusCode, 200);
    assert.equal(body.metadata.resourceVersion, 'x20', "the upstream's answer");
    const metrics = await (await request(`${proxy!.opsAddress}/metrics`)).body.text();
    const counted = metrics
      .split('\n')
      .filter((l) => l.startsWith('kube_cache_proxy_requests_total{') && l.includes('resource="configmaps"'));
    assert.deepEqual(counted, [
      'kube_cache_proxy_requests_total{verb="LIST",group="",version="v1",resource="configmaps",subresource="",served_from="upstream",code="200",reason="not-cached"} 1',
    ]);
    assert.deepEqual(up!.requests.slice(n), ['GET /api/v1/namespaces/ns/configmaps']);
    // Detected once: the reflector does not retry.
    const before = up!.requests.length;
    await new Promise((res) => setTimeout(res, 2000));
    assert.equal(up!.requests.length, before, up!.requests.slice(before).join('\n'));
  });
});
