/**
 * `--response-compression=gzip` against the real apiserver (issue 12, "gzip to clients that
 * ask"): a LIST above 128 KiB from the cache goes out as one gzip member, like the apiserver's
 * own answer to the same request (checked side by side: Content-Encoding, Vary, a single
 * member, identity at or below the threshold and for clients without gzip), and real clients
 * read it as they read the apiserver: kubectl, a client-go informer (the fixture's probe, LIST +
 * WATCH: Go's transport asks for gzip), and `curl --compressed` (which decodes ONE member only).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { createUpstream, type Upstream } from '../../src/upstream/connection.ts';
import { type Fixture, runProbe, sharedFixture } from '../fixture/index.ts';
import { gzipMembers } from '../support/gzip-members.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';
import { createMany } from '../support/seed-objects.ts';

const run = promisify(execFile);
/** ConfigMaps of ~1 KB: the namespace's LIST is ~0.6 MB, far above the 128 KiB threshold. */
const N = 600;

describe('--response-compression=gzip: large cache answers gzip-compressed like the apiserver', () => {
  let f: Fixture;
  let up: Upstream;
  let ns: string;
  let proxy: InProcessProxy;

  before(async () => {
    f = await sharedFixture();
    up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
    ns = await f.newNamespace('rgzip');
    await createMany(up, `/api/v1/namespaces/${ns}/configmaps`, N, (i) => ({
      metadata: { name: `cm-${String(i).padStart(4, '0')}` },
      data: { r: randomBytes(300).toString('base64'), i: String(i).repeat(50) },
    }));
    proxy = await startProxy(f, {
      resources: 'configmaps',
      args: ['--response-compression', 'gzip'],
      syncTimeoutMs: 120_000,
    });
  });
  after(async () => {
    await proxy?.stop();
    await up?.close();
  });

  const get = async (base: string, path: string, encoding: string | undefined) => {
    const r = await request(`${base}${path}`, {
      ...(base === f.server ? { dispatcher: up.dispatcher } : {}),
      headers: {
        authorization: `Bearer ${f.tokens.admin}`,
        ...(encoding !== undefined ? { 'accept-encoding': encoding } : {}),
      },
    });
    return { status: r.statusCode, headers: r.headers, body: Buffer.from(await r.body.arrayBuffer()) };
  };

  test('raw LISTs: the same encoding decisions as the apiserver, side by side', async () => {
    const list = `/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`;
    const cases: Array<[string, string | undefined, boolean]> = [
      [list, 'gzip', true],
      [list, 'gzip, deflate, br', true],
      [list, undefined, false],
      [list, 'identity', false],
      [list, 'gzip;q=1.0', false],
      // A page of 20 items is far below 128 KiB.
      [`${list.replace('resourceVersion=0', 'limit=20')}`, 'gzip', false],
    ];
    for (const [path, enc, gzipped] of cases) {
      const d = await get(f.server, path, enc);
      const p = await get(proxy.url, path, enc);
      const what = `${path} Accept-Encoding: ${enc}`;
      assert.equal(d.status, 200, what);
      assert.equal(p.status, 200, what);
      assert.equal(d.headers['content-encoding'], gzipped ? 'gzip' : undefined, `apiserver: ${what}`);
      assert.equal(p.headers['content-encoding'], d.headers['content-encoding'], `proxy: ${what}`);
      assert.equal(p.headers.vary, d.headers.vary, `Vary: ${what}`);
      if (gzipped) {
        assert.equal(gzipMembers(d.body), 1, `apiserver members: ${what}`);
        assert.equal(gzipMembers(p.body), 1, `proxy members: ${what}`);
        const plain = gunzipSync(p.body);
        const items = (b: Buffer) => (JSON.parse(String(b)) as { items: unknown[] }).items;
        assert.ok(items(plain).length >= N);
        assert.deepEqual(items(plain), items(gunzipSync(d.body)), `items: ${what}`);
      }
    }
  });

  test('curl --compressed decodes the whole body (one member), equal to the identity answer', async () => {
    const url = `${proxy.url}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`;
    // The token from a file (never on a command line a failure message would print), headers to
    // a file (curl 7.88 crashes writing `-D /dev/stderr` into a pipe).
    const auth = join(f.dir, `curl-auth-${process.pid}`);
    const dump = join(f.dir, `curl-headers-${process.pid}`);
    await writeFile(auth, `Authorization: Bearer ${f.tokens.admin}\n`, { mode: 0o600 });
    const gz = await run('curl', ['-sS', '--compressed', '-H', `@${auth}`, '-D', dump, url], {
      maxBuffer: 64 << 20,
    });
    assert.match(await readFile(dump, 'utf8'), /content-encoding: gzip/i);
    // From the cache (no apiserver Audit-Id), indented for curl: until indented answers were
    // served from the cache this request went upstream (`pretty`) and tested the apiserver's gzip.
    assert.doesNotMatch(await readFile(dump, 'utf8'), /audit-id/i);
    assert.ok(gz.stdout.startsWith('{\n  "kind": "ConfigMapList",'));
    const plain = await run('curl', ['-sS', '-H', `@${auth}`, '-D', dump, url], { maxBuffer: 64 << 20 });
    assert.doesNotMatch(await readFile(dump, 'utf8'), /content-encoding/i);
    // Equal but for the list's resourceVersion: the cache's current RV, which any ConfigMap
    // written elsewhere on the shared apiserver moves between the two requests (this compared
    // whole bodies and failed under load).
    type List = { metadata: { resourceVersion: string }; items: unknown[] };
    const [g, pl] = [JSON.parse(gz.stdout) as List, JSON.parse(plain.stdout) as List];
    assert.ok(BigInt(g.metadata.resourceVersion) <= BigInt(pl.metadata.resourceVersion));
    g.metadata.resourceVersion = pl.metadata.resourceVersion;
    assert.equal(JSON.stringify(g), JSON.stringify(pl));
    assert.ok(g.items.length >= N);
  });

  test('kubectl get -o json through the gzip proxy prints what it prints direct', async () => {
    const kube = (kubeconfig: string) =>
      f.kubectl(['get', 'configmaps', '-n', ns, '-o', 'json'], { kubeconfig, timeoutMs: 60_000 });
    const d = await kube(f.kubeconfigs.admin);
    const p = await kube(proxy.kubeconfig);
    assert.equal(p.code, 0, p.stderr);
    assert.equal(p.stdout, d.stdout);
    assert.ok((JSON.parse(p.stdout) as { items: unknown[] }).items.length >= N);
  });

  test('a client-go informer (LIST + WATCH, gzip by Go transport) syncs the same store as direct', async () => {
    const probe = (kubeconfig: string) =>
      runProbe(f.bin.probe, {
        kubeconfig,
        resource: 'configmaps',
        namespace: ns,
        watchList: false,
        durationMs: 200,
      });
    const d = await probe(f.kubeconfigs.admin);
    const p = await probe(proxy.kubeconfig);
    assert.ok(d.store.length >= N);
    assert.deepEqual(p.store, d.store);
  });
});
