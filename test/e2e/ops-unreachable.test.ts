/**
 * While the apiserver is unreachable (a private fixture whose kube-apiserver is frozen, then killed): RV="0"
 * reads keep being answered from the cache; a "consistent" read (RV="") is no longer served from
 * the cache (the upstream stream is not live) and is forwarded, so the client gets the
 * pass-through error; writes fail the same way.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { type Fixture, startFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { get } from '../support/http-get.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

describe('apiserver unreachable', () => {
  let f: Fixture;
  let proxy: CliProxy;
  let ns: string;

  before(async () => {
    f = await startFixture();
    ns = await f.newNamespace('down');
    const c = await f.kubectl(['create', 'configmap', 'kept', '-n', ns, '--from-literal=k=v']);
    assert.equal(c.code, 0, c.stderr);
    proxy = await startProxy(f, {
      run: 'cli',
      resources: 'configmaps',
      args: ['--upstream-check-interval', '1s'],
    });
    await eventually('ready', 60_000, async () =>
      (await get(`${proxy.ops}/readyz`)).status === 200 ? 1 : undefined,
    );
  });
  after(async () => {
    await proxy?.stop();
    await f?.stop();
  });

  test('frozen (SIGSTOP, half-open): RV="0" and, within the liveness window, RV="" are served from the cache', async () => {
    const pid = f.pids().apiserver;
    process.kill(pid, 'SIGSTOP');
    try {
      for (const rv of ['?resourceVersion=0', '']) {
        const r = await get(`${proxy.url}/api/v1/namespaces/${ns}/configmaps${rv}`);
        assert.equal(r.status, 200, `${rv}: ${r.body}`);
        assert.equal(r.headers['audit-id'], undefined, `${rv} served from the cache`);
        assert.deepEqual(
          (JSON.parse(r.body) as { items: Array<{ metadata: { name: string } }> }).items.map(
            (i) => i.metadata.name,
          ),
          ['kept'],
        );
      }
      // The cache still answers; only the upstream check may say otherwise (excluded here).
      assert.equal((await get(`${proxy.ops}/readyz?exclude=upstream`)).status, 200);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  });

  test('killed (connection refused): RV="0" LIST still 200 from the cache; RV="" and writes get the pass-through 503', async () => {
    process.kill(f.pids().apiserver, 'SIGKILL');
    // The reflector sees the stream break, then connection refused: the stream is not live.
    await eventually('not live', 30_000, async () => {
      const d = JSON.parse((await get(`${proxy.ops}/debug/cache`)).body) as {
        resources: Array<{ live: boolean }>;
      };
      return d.resources[0]!.live === false ? true : undefined;
    });
    const any = await get(`${proxy.url}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`);
    assert.equal(any.status, 200);
    assert.deepEqual(
      (JSON.parse(any.body) as { items: Array<{ metadata: { name: string } }> }).items.map(
        (i) => i.metadata.name,
      ),
      ['kept'],
    );
    const one = await get(`${proxy.url}/api/v1/namespaces/${ns}/configmaps/kept?resourceVersion=0`);
    assert.equal(one.status, 200);
    // The caches' checks stay green (they can still answer RV="0" reads); the upstream check
    // says the apiserver is gone: an operator who prefers stale reads to no endpoint probes
    // /readyz?exclude=upstream.
    assert.equal((await get(`${proxy.ops}/readyz?exclude=upstream`)).status, 200);
    const ready = await eventually('readyz names the refused upstream', 30_000, async () => {
      const r = await get(`${proxy.ops}/readyz?verbose`);
      // (A check in flight when the process died may say ECONNRESET first.)
      return r.status === 503 && r.body.includes('connection refused') ? r.body : undefined;
    });
    assert.match(
      ready,
      /\[-\]upstream failed: GET https:\/\/127\.0\.0\.1:\d+\/version: connection refused \(ECONNREFUSED\)\n/,
    );

    const consistent = await get(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`);
    const write = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: 'new' } }),
    });
    const writeBody = await write.body.text();
    for (const [what, status, body] of [
      ['RV=""', consistent.status, consistent.body],
      ['POST', write.statusCode, writeBody],
    ] as const) {
      assert.equal(status, 503, `${what}: ${body}`);
      const s = JSON.parse(body) as { kind: string; code: number; reason: string; message: string };
      assert.deepEqual([s.kind, s.code, s.reason], ['Status', 503, 'ServiceUnavailable'], `${what}: ${body}`);
      assert.match(s.message, /ECONNREFUSED|connect|unavailable/i, `${what}: ${body}`);
    }
  });
});
