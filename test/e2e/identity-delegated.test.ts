/**
 * Issue 10, delegated mode over TLS beyond the matrix:
 * - revoking a RoleBinding takes effect through the proxy within the authorized-decision TTL
 *   (`--authorization-webhook-cache-authorized-ttl`, short here: 2s), asserted before and after;
 * - a client-go informer (the fixture's probe) through the authenticated TLS listener with a
 *   ServiceAccount token syncs and ends with the same store as the same informer run directly.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import {
  type Fixture,
  READ_CLUSTER_ROLE,
  runProbe,
  sharedFixture,
  writeKubeconfig,
} from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const TTL_MS = 2000;

describe('issue 10: delegated mode over TLS', () => {
  let f: Fixture;
  let agent: Agent;
  let p: InProcessProxy;
  const get = async (base: string, path: string, token: string) => {
    const r = await request(`${base}${path}`, {
      dispatcher: agent,
      headers: { accept: 'application/json', authorization: `Bearer ${token}` },
    });
    return {
      status: r.statusCode,
      body: await r.body.text(),
      fromCache: r.headers['audit-id'] === undefined,
    };
  };

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    p = await startProxy(f, {
      resources: 'configmaps',
      delegatedAuth: true,
      args: [
        `--authorization-webhook-cache-authorized-ttl=${TTL_MS / 1000}s`,
        `--authorization-webhook-cache-unauthorized-ttl=${TTL_MS / 1000}s`,
      ],
    });
    assert.match(p.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  });
  after(async () => {
    await p?.stop();
    await agent?.close();
  });

  test('a revoked RoleBinding takes effect within the authorized TTL', async () => {
    const ns = await f.newNamespace('revoke');
    const sa = `revoke-${ns.split('-').pop()}`;
    for (const args of [
      ['create', 'serviceaccount', sa, '-n', 'kcp-system'],
      [
        'create',
        'rolebinding',
        'view',
        `--clusterrole=${READ_CLUSTER_ROLE}`,
        `--serviceaccount=kcp-system:${sa}`,
        '-n',
        ns,
      ],
    ]) {
      const r = await f.kubectl(args);
      assert.equal(r.code, 0, r.stderr);
    }
    const t = await f.kubectl(['create', 'token', sa, '-n', 'kcp-system', '--duration=1h']);
    assert.equal(t.code, 0, t.stderr);
    const token = t.stdout.trim();
    const path = `/api/v1/namespaces/${ns}/configmaps`;

    // Before: allowed, from the cache, as direct. (RBAC reaches the apiserver's authorizer within moments.)
    let allowed = await get(p.url, path, token);
    for (let i = 0; allowed.status !== 200 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      allowed = await get(p.url, path, token);
    }
    assert.equal(allowed.status, 200, allowed.body);
    assert.equal(allowed.fromCache, true);
    assert.equal((JSON.parse(allowed.body) as { kind: string }).kind, 'ConfigMapList');

    const del = await f.kubectl(['delete', 'rolebinding', 'view', '-n', ns]);
    assert.equal(del.code, 0, del.stderr);
    const revokedAt = Date.now();
    let direct = await get(f.server, path, token);
    while (direct.status !== 403 && Date.now() - revokedAt < 10_000) {
      await new Promise((r) => setTimeout(r, 50));
      direct = await get(f.server, path, token);
    }
    assert.equal(direct.status, 403, 'the apiserver itself saw the revocation');

    // After: denied within the TTL (plus a margin for a loaded machine), worded as the apiserver.
    let via = await get(p.url, path, token);
    while (via.status !== 403 && Date.now() - revokedAt < TTL_MS + 8000) {
      await new Promise((r) => setTimeout(r, 100));
      via = await get(p.url, path, token);
    }
    const tookMs = Date.now() - revokedAt;
    assert.equal(via.status, 403, `still ${via.status} ${tookMs} ms after the revocation`);
    assert.ok(tookMs <= TTL_MS + 8000, `took ${tookMs} ms`);
    assert.deepEqual(JSON.parse(via.body), JSON.parse(direct.body));
    assert.match(
      (JSON.parse(via.body) as { message: string }).message,
      new RegExp(
        `^configmaps is forbidden: User "system:serviceaccount:kcp-system:${sa}" cannot list resource "configmaps" in API group "" in the namespace "${ns}"$`,
      ),
    );
  });

  test('the client-go informer through the TLS listener with a ServiceAccount token syncs and equals direct', async () => {
    const run = `p${Math.random().toString(36).slice(2, 8)}`;
    const items = Array.from({ length: 20 }, (_, i) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `probe-${run}-${i}`, labels: { probe: run } },
    }));
    const made = await f.kubectl(['apply', '-n', f.limitedNamespace, '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
    });
    assert.equal(made.code, 0, made.stderr);
    const viaKc = await writeKubeconfig(join(f.dir, `probe-tls-${process.pid}.kubeconfig`), {
      server: p.url,
      caFile: f.caFile,
      user: { token: f.tokens.reader },
    });
    const o = { resource: 'configmaps', namespace: f.limitedNamespace, labelSelector: `probe=${run}` };
    for (const watchList of [true, false]) {
      const [via, dir] = await Promise.all([
        runProbe(f.bin.probe, { ...o, kubeconfig: viaKc, watchList }),
        runProbe(f.bin.probe, { ...o, kubeconfig: f.kubeconfigs.reader, watchList }),
      ]);
      assert.ok(via.syncedMs >= 0, 'the informer through the proxy synced');
      assert.equal(via.store.length, 20);
      assert.deepEqual(
        via.store.map((s) => `${s.key}@${s.rv}`).sort(),
        dir.store.map((s) => `${s.key}@${s.rv}`).sort(),
        `watchList=${watchList}`,
      );
    }
  });
});
