/**
 * Issue 11 ("also check"): the reflectors' upstream requests must not queue behind pass-through
 * requests. Against a scripted upstream (test/support/fake-upstream.ts) that holds 70 slow
 * pass-through requests open — more than a connection pool's 64 connections — the reflector's
 * re-watch still reaches the upstream at once.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Agent, request } from 'undici';
import type { RunningProxy } from '../../src/main.ts';
import { configMap, type FakeUpstream, startFakeUpstream } from '../support/fake-upstream.ts';
import { runProxyInProcess } from '../support/proxy.ts';

const END = '"annotations":{"k8s.io/initial-events-end":"true"}';

let up: FakeUpstream | undefined;
let dir: string | undefined;
let proxy: RunningProxy | undefined;
const held: import('node:http').ServerResponse[] = [];
let holding = true;
after(async () => {
  holding = false;
  for (const r of held) r.destroy();
  await proxy?.stop();
  await up?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('issue 11 (pool): a re-watch is not queued behind slow pass-through requests', async () => {
  // Slow pass-through requests: the upstream never answers GETs of secrets.
  up = await startFakeUpstream((_req, url, res) => {
    if (!url.pathname.endsWith('/secrets') || !holding) return false;
    held.push(res);
    return true;
  });
  dir = await mkdtemp(join(tmpdir(), 'kcp-int-'));
  const kubeconfig = await up.writeKubeconfig(join(dir, 'kubeconfig'));
  let parts: Awaited<ReturnType<typeof runProxyInProcess>>['parts'];
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
  const w0 = await up.nextWatch();
  w0.send('ADDED', configMap('a', 10));
  w0.send('BOOKMARK', `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"20",${END}}}`);
  const deadline = Date.now() + 10_000;
  while (parts.statusSource.resources()[0]?.synced !== true) {
    if (Date.now() > deadline) throw new Error('not synced');
    await new Promise((res) => setTimeout(res, 20));
  }
  // 70 clients whose requests the upstream holds (each keeps one upstream connection busy).
  const clients = new Agent({ connections: 100 });
  const slow = Array.from({ length: 70 }, (_, i) =>
    request(`${proxy!.address}/api/v1/namespaces/ns/secrets?i=${i}`, {
      dispatcher: clients,
      headers: { authorization: 'Bearer client' },
    }).catch(() => undefined),
  );
  // As many as the pass-through pool lets through (64 connections; 63 when it is shared with the
  // reflector's open watch).
  while (held.length < 63) {
    if (Date.now() > deadline) throw new Error(`only ${held.length} slow requests reached the upstream`);
    await new Promise((res) => setTimeout(res, 20));
  }
  await new Promise((res) => setTimeout(res, 300));
  // The reflector's watch ends (its timeout): it re-watches from 20 at once.
  w0.end();
  const next = await Promise.race([
    up.nextWatch(),
    new Promise<undefined>((res) => setTimeout(() => res(undefined), 3000)),
  ]);
  assert.ok(next, 'the re-watch reached the upstream within 3 s');
  assert.equal(next.query.get('resourceVersion'), '20');
  holding = false;
  for (const r of held) r.destroy();
  await Promise.all(slow);
  await clients.close();
});
