/**
 * Reads that wait for the cache to become fresh enough, against a scripted upstream
 * (test/support/fake-upstream.ts) whose requests are counted: what reaches the apiserver, and
 * when, must be exact here.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
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
const endBookmark = (rv: number) =>
  `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"${rv}","creationTimestamp":null,${END}}}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('freshness waits in front of a scripted upstream', () => {
  let up: FakeUpstream;
  let dir: string;
  let proxy: RunningProxy | undefined;
  let parts: ProxyParts;
  let w0: ScriptedWatch;
  beforeEach(async () => {
    up = await startFakeUpstream();
    dir = await mkdtemp(join(tmpdir(), 'kcp-fresh-'));
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
    ]));
    w0 = await up.nextWatch();
    w0.send('ADDED', configMap('a', 10));
    w0.send('BOOKMARK', endBookmark(20));
    await until('synced', () => parts.statusSource.resources()[0]?.synced === true);
  });
  afterEach(async () => {
    await proxy?.stop();
    await up?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('issue 11 item 2: after a stream outage RV="" reads never go back in time; they go upstream until an event or bookmark brings the cache past what clients were shown', async () => {
    const base = `${proxy!.address}/api/v1/namespaces/ns/configmaps`;
    const auth = { authorization: 'Bearer client' };
    // The upstream's state moves on while the proxy's stream is down: b was created at 25, the
    // newest RV is 30.
    let lists = 0;
    up.answer = (req, url, res) => {
      if (req.method !== 'GET' || url.pathname !== '/api/v1/namespaces/ns/configmaps') return false;
      lists++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'ConfigMapList',
          apiVersion: 'v1',
          metadata: { resourceVersion: '30' },
          items: [configMap('a', 10), configMap('b', 25)],
        }),
      );
      return true;
    };
    const names = async () => {
      const r = await request(base, { headers: auth });
      assert.equal(r.statusCode, 200);
      const l = (await r.body.json()) as {
        metadata: { resourceVersion: string };
        items: { metadata: { name: string } }[];
      };
      return `${l.metadata.resourceVersion}: ${l.items.map((i) => i.metadata.name).join(',')}`;
    };
    const live = () => parts.statusSource.resources()[0]?.live === true;
    // The stream fails (a 500 ERROR event), the re-watch is refused (500): not live. The next
    // re-watch is slow to be accepted.
    up.holdWatches = true;
    w0.error(500, 'InternalError', 'etcd leader changed');
    (await up.nextWatch()).fail(500, 'InternalError', 'etcd leader changed');
    await until('not live', () => !live());
    const w1 = await up.nextWatch();
    assert.equal(w1.query.get('resourceVersion'), '20');
    // Not live: forwarded, the client sees b at 30.
    assert.equal(await names(), '30: a,b');
    assert.equal(lists, 1);
    // The re-watch from 20 is accepted: live again, but the cache is at 20, without b.
    w1.accept();
    await until('live', live);
    // Served from the cache this would be "20: a" (b vanishes): it goes upstream instead.
    assert.equal(await names(), '30: a,b');
    assert.equal(lists, 2);
    // An event moves the cache to 25: still older than 30, still upstream.
    w1.send('ADDED', configMap('b', 25));
    await until('cache at 25', () => parts.statusSource.resources()[0]?.resourceVersion === '25');
    assert.equal(await names(), '30: a,b');
    assert.equal(lists, 3);
    // The upstream's bookmark brings it to 30: served from the cache from now on.
    w1.send('BOOKMARK', endBookmark(30).replace(`,${END}`, ''));
    await until('cache at 30', () => parts.statusSource.resources()[0]?.resourceVersion === '30');
    assert.equal(await names(), '30: a,b');
    assert.equal(lists, 3, 'served from the cache');
  });

  test('issue 11 item 12: a client that leaves while its read waits for freshness sends nothing upstream', async () => {
    const path = '/api/v1/namespaces/ns/configmaps?resourceVersion=99';
    const u = new URL(proxy!.address);
    const req = httpRequest({ host: u.hostname, port: u.port, path, agent: false });
    req.on('error', () => {});
    req.end();
    // The cache is at 20 and waits (up to 3 s) for 99; the client hangs up meanwhile.
    await sleep(300);
    req.destroy();
    // Past the whole freshness wait: had the read been forwarded, it would be here by now.
    await sleep(3500);
    assert.deepEqual(
      up.requests.filter((r) => r.includes('resourceVersion=99')),
      [],
      up.requests.join('\n'),
    );
  });
});
