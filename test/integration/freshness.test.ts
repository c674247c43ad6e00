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
import type { ProxyParts, RunningProxy } from '../../src/main.ts';
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
  const until = async (what: string, cond: () => boolean) => {
    const deadline = Date.now() + 10_000;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(20);
    }
  };

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
