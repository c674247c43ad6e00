/**
 * Issue 10, the simple (sidecar) mode on loopback, without `--delegated-auth`:
 * - the DNS-rebinding request (`Host: evil.example:8001`, no credential) is refused with a 403
 *   Status (kubectl proxy's `--accept-hosts` default; kubectl proxy answers text/plain, we answer a
 *   Status: the documented difference), while `localhost`, `127.0.0.1` and `[::1]` with a port work;
 * - a projected-token rotation (the proxy's token file rewritten with a new token of the SAME
 *   ServiceAccount, the client presenting the new token, or still the old one) keeps reads on the
 *   cache, while a token of another identity goes upstream and gets the apiserver's own answer.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture, writeKubeconfig } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

interface Reply {
  status: number;
  body: string;
  fromCache: boolean;
}

describe('issue 10: simple mode on loopback', () => {
  let f: Fixture;
  let direct: Agent;
  const get = async (base: string, path: string, headers: Record<string, string>, dispatcher?: Agent) => {
    const r = await request(`${base}${path}`, {
      headers: { accept: 'application/json', ...headers },
      ...(dispatcher ? { dispatcher } : {}),
    });
    return {
      status: r.statusCode,
      body: await r.body.text(),
      fromCache: r.headers['audit-id'] === undefined,
    } satisfies Reply;
  };

  before(async () => {
    f = await sharedFixture();
    direct = new Agent({ connect: { ca: f.caPem } });
  });
  after(async () => {
    await direct?.close();
  });

  describe('Host allow-list (DNS rebinding)', () => {
    let p: InProcessProxy;
    before(async () => {
      p = await startProxy(f, { resources: 'configmaps' });
    });
    after(async () => {
      await p?.stop();
    });

    test('Host: evil.example:8001 without a credential gets a 403 Status, not the proxy identity', async () => {
      const r = await get(p.url, '/api/v1/namespaces/kube-system/configmaps', { host: 'evil.example:8001' });
      assert.equal(r.status, 403, r.body);
      const s = JSON.parse(r.body) as {
        kind: string;
        apiVersion: string;
        status: string;
        reason: string;
        code: number;
      };
      assert.deepEqual(
        { kind: s.kind, apiVersion: s.apiVersion, status: s.status, reason: s.reason, code: s.code },
        { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403 },
      );
      assert.match(
        (JSON.parse(r.body) as { message: string }).message,
        /^forbidden: Host "evil\.example:8001" is not accepted by --accept-hosts \(/,
      );
      assert.doesNotMatch(r.body, /ConfigMapList/);
    });

    test('an allowed host with a port (localhost, 127.0.0.1, [::1]) is served from the cache', async () => {
      const port = new URL(p.url).port;
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost']) {
        const r = await get(p.url, '/api/v1/namespaces/kube-system/configmaps', { host });
        assert.equal(r.status, 200, `${host}: ${r.body}`);
        assert.equal((JSON.parse(r.body) as { kind: string }).kind, 'ConfigMapList');
        assert.equal(r.fromCache, true, host);
      }
    });

    test('a refused host is refused with a credential too (the allow-list applies in every mode without authentication)', async () => {
      const r = await get(p.url, '/api/v1/namespaces/kube-system/configmaps', {
        host: 'evil.example',
        authorization: `Bearer ${f.tokens.admin}`,
      });
      assert.equal(r.status, 403, r.body);
    });
  });

  describe('projected-token rotation', () => {
    let p: InProcessProxy;
    let tokenFile: string;
    let t1: string;
    const token = async (sa: string) => {
      const r = await f.kubectl(['create', 'token', sa, '-n', 'kcp-system', '--duration=1h']);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout.trim();
    };
    const path = '/api/v1/namespaces/kube-system/configmaps';

    before(async () => {
      tokenFile = join(f.dir, `rotating-${process.pid}.token`);
      t1 = await token('admin');
      await writeFile(tokenFile, t1);
      const kubeconfig = await writeKubeconfig(join(f.dir, `rotating-${process.pid}.kubeconfig`), {
        server: f.server,
        caFile: f.caFile,
        user: { tokenFile },
      });
      p = await startProxy(f, { resources: 'configmaps', kubeconfig });
    });
    after(async () => {
      await p?.stop();
    });

    test("the proxy's own token, then a new token of the same ServiceAccount, old and new: all from the cache", async () => {
      const before = await get(p.url, path, { authorization: `Bearer ${t1}` });
      assert.equal(before.status, 200, before.body);
      assert.equal(before.fromCache, true);

      const t2 = await token('admin');
      assert.notEqual(t2, t1);
      await writeFile(tokenFile, t2);
      for (const t of [t2, t1, t2]) {
        const r = await get(p.url, path, { authorization: `Bearer ${t}` });
        assert.equal(r.status, 200, r.body);
        assert.equal((JSON.parse(r.body) as { kind: string }).kind, 'ConfigMapList');
        assert.equal(r.fromCache, true, t === t1 ? 'old token' : 'new token');
      }
      // The rotation did not break the proxy's own upstream use (its reflector reads the new file).
      const ns = await f.newNamespace('rotate');
      const made = await f.kubectl(['create', 'configmap', 'after-rotation', '-n', ns]);
      assert.equal(made.code, 0, made.stderr);
      const deadline = Date.now() + 15_000;
      for (;;) {
        const r = await get(p.url, `/api/v1/namespaces/${ns}/configmaps/after-rotation`, {});
        if (r.status === 200 && r.fromCache) break;
        assert.ok(Date.now() < deadline, `not in the cache after rotation: ${r.status} ${r.body}`);
        await new Promise((res) => setTimeout(res, 200));
      }
    });

    test('a token of another identity goes upstream: the apiserver answers it, as direct', async () => {
      for (const t of [f.tokens.none, f.tokens.limited]) {
        const via = await get(p.url, path, { authorization: `Bearer ${t}` });
        const dir = await get(f.server, path, { authorization: `Bearer ${t}` }, direct);
        assert.equal(via.fromCache, false);
        assert.equal(via.status, dir.status);
        assert.equal(via.status, 403);
        assert.deepEqual(JSON.parse(via.body), JSON.parse(dir.body));
      }
    });
  });
});
