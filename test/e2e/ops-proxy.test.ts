/**
 * The ops listener of the real CLI against the fixture apiserver: /readyz 503 until every
 * resource synced (one is a CRD installed only after start) then 200, the metrics scrape parses
 * and moves when objects change, /debug/cache values, and no credential in the debug-level logs
 * of a run that uses bearer tokens both ways (the proxy's own identity: token + client
 * certificate; clients' Authorization forwarded).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { get } from '../support/http-get.ts';
import { has, parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A self-contained kubeconfig for the fixture with `user` credentials; returns its path. */
function writeInlineKubeconfig(path: string, f: Fixture, user: Record<string, string>): string {
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'f', cluster: { server: f.server, 'certificate-authority-data': b64(f.caPem) } }],
      users: [{ name: 'f', user }],
      contexts: [{ name: 'f', context: { cluster: 'f', user: 'f' } }],
      'current-context': 'f',
    }),
    { mode: 0o600 },
  );
  return path;
}

describe('ops listener of the real proxy', () => {
  let f: Fixture;
  let proxy: CliProxy;
  let ns: string;
  let tmp: string;
  let adminKeyPem: string;
  let adminUser: Record<string, string>;
  const group = `ops${Math.random().toString(36).slice(2, 8)}.kcp.test`;
  const crdName = `widgets.${group}`;
  const widgets = `/apis/${group}/v1`;
  const gr = { group, resource: 'widgets' };

  before(async () => {
    f = await sharedFixture();
    ns = await f.newNamespace('ops');
    tmp = mkdtempSync(join(tmpdir(), 'kcp-ops-'));
    // The sidecar's identity: a bearer token (a client certificate is checked in its own run).
    const kubeconfig = writeInlineKubeconfig(join(tmp, 'proxy.kubeconfig'), f, { token: f.tokens.admin });
    const admin = JSON.parse(readFileSync(f.kubeconfigs.admin, 'utf8')) as {
      users: Array<{ user: Record<string, string> }>;
    };
    adminUser = admin.users[0]!.user;
    adminKeyPem = readFileSync(adminUser['client-key']!, 'utf8');
    proxy = await startProxy(f, {
      run: 'cli',
      kubeconfig,
      resources: `configmaps,${crdName}`,
      args: ['--log-level', 'debug'],
    });
  });
  after(async () => {
    await proxy?.stop();
    await f?.kubectl(['delete', 'crd', crdName, '--ignore-not-found', '--wait=false']);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('/readyz: 503 while a resource (a CRD not installed yet) is not synced, 200 once it is', async () => {
    // configmaps syncs; the CRD's discovery keeps failing.
    const notReady = await eventually('configmaps synced', 30_000, async () => {
      const r = await get(`${proxy.ops}/readyz?verbose`);
      return r.body.includes('[+]cache-sync/configmaps ok') ? r : undefined;
    });
    assert.equal(notReady.status, 503);
    assert.match(
      notReady.body,
      new RegExp(`\\[-\\]cache-sync/${crdName.replaceAll('.', '\\.')} failed: not synced`),
    );
    assert.match(notReady.body, /readyz check failed\n$/);
    assert.equal((await get(`${proxy.ops}/readyz`)).status, 503);
    assert.equal((await get(`${proxy.ops}/livez`)).body, 'ok');
    const m0 = parsePrometheus((await get(`${proxy.ops}/metrics`)).body);
    assert.equal(sum(m0, 'kube_cache_proxy_reflector_synced', { group: '', resource: 'configmaps' }), 1);
    assert.equal(sum(m0, 'kube_cache_proxy_reflector_synced', gr), 0);

    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: crdName },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    };
    const c = await f.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) });
    assert.equal(c.code, 0, c.stderr);
    // Discovery is retried with the reflector backoff (0.8 s … 30 s).
    const ready = await eventually('ready', 90_000, async () => {
      const r = await get(`${proxy.ops}/readyz?verbose`);
      return r.status === 200 ? r : undefined;
    });
    assert.match(ready.body, new RegExp(`\\[\\+\\]cache-sync/${crdName.replaceAll('.', '\\.')} ok`));
    assert.equal((await get(`${proxy.ops}/readyz`)).body, 'ok');
  });

  test('metrics parse and move with objects; /debug/cache agrees', async () => {
    const scrape = async () => parsePrometheus((await get(`${proxy.ops}/metrics`)).body);
    const auth = { authorization: `Bearer ${f.tokens.admin}` };
    const m0 = await scrape();
    assert.equal(sum(m0, 'kube_cache_proxy_watch_cache_objects', gr), 0);
    const dispatched0 = sum(m0, 'kube_cache_proxy_watch_cache_events_dispatched_total', gr);
    assert.ok(
      sum(m0, 'kube_cache_proxy_upstream_requests_total', { ...gr, verb: 'WATCH', code: '200' }) >= 1,
    );
    assert.ok(has(m0, 'process_resident_memory_bytes'));

    let lastRV = 0n;
    for (const name of ['a', 'b', 'c']) {
      const r = await request(`${proxy.url}${widgets}/namespaces/${ns}/widgets`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name } }),
      });
      const body = (await r.body.json()) as { metadata: { resourceVersion: string } };
      assert.equal(r.statusCode, 201);
      lastRV = BigInt(body.metadata.resourceVersion);
    }
    // Read-your-writes: this consistent LIST waits for the cache to hold all three.
    const list = await get(`${proxy.url}${widgets}/namespaces/${ns}/widgets`, auth);
    assert.equal(list.status, 200);
    assert.equal(list.headers['audit-id'], undefined, 'served from the cache');
    assert.equal((JSON.parse(list.body) as { items: unknown[] }).items.length, 3);
    const m1 = await scrape();
    assert.equal(sum(m1, 'kube_cache_proxy_watch_cache_objects', gr), 3);
    assert.ok(sum(m1, 'kube_cache_proxy_watch_cache_bytes', gr) > 100);
    assert.equal(sum(m1, 'kube_cache_proxy_watch_cache_events_dispatched_total', gr) - dispatched0, 3);
    assert.equal(sum(m1, 'kube_cache_proxy_watch_cache_events_received_total', gr), 3);
    assert.equal(sum(m1, 'kube_cache_proxy_watch_cache_history_events', gr), 3);
    assert.equal(
      sum(m1, 'kube_cache_proxy_requests_total', { ...gr, verb: 'LIST', code: '200', served_from: 'cache' }),
      1,
    );
    assert.equal(
      sum(m1, 'kube_cache_proxy_requests_total', {
        ...gr,
        verb: 'CREATE',
        code: '201',
        served_from: 'upstream',
      }),
      3,
    );
    assert.equal(
      sum(m1, 'kube_cache_proxy_upstream_requests_total', { ...gr, verb: 'CREATE', code: '201' }),
      3,
    );
    assert.equal(sum(m1, 'kube_cache_proxy_reflector_relists_total', { ...gr, reason: 'initial' }), 1);
    assert.ok(sum(m1, 'kube_cache_proxy_watch_cache_resource_version', gr) >= Number(lastRV));

    // A cached watch is a registered watcher.
    const ac = new AbortController();
    const w = await request(`${proxy.url}${widgets}/namespaces/${ns}/widgets?watch=1`, {
      headers: auth,
      signal: ac.signal,
    });
    assert.equal(w.statusCode, 200);
    const debug = JSON.parse((await get(`${proxy.ops}/debug/cache`)).body) as {
      ready: boolean;
      resources: Array<Record<string, unknown> & { window: Record<string, unknown> }>;
    };
    const d = debug.resources.find((r) => r.name === crdName)!;
    assert.equal(debug.ready, true);
    assert.deepEqual(
      { synced: d.synced, live: d.live, objects: d.objects, watchers: d.watchers, events: d.window.events },
      { synced: true, live: true, objects: 3, watchers: 1, events: 3 },
    );
    assert.equal(d.bytes, sum(m1, 'kube_cache_proxy_watch_cache_bytes', gr));
    assert.ok(BigInt(d.resourceVersion as string) >= lastRV);
    assert.ok(BigInt(d.window.oldestResourceVersion as string) < lastRV);
    assert.deepEqual(
      debug.resources.map((r) => r.name),
      ['configmaps', crdName],
    );
    assert.equal(sum(await scrape(), 'kube_cache_proxy_registered_watchers', gr), 1);
    ac.abort();
    await w.body.dump().catch(() => {});

    // A delete moves the store down and dispatches one more event.
    const del = await request(`${proxy.url}${widgets}/namespaces/${ns}/widgets/a`, {
      method: 'DELETE',
      headers: auth,
    });
    await del.body.dump();
    assert.equal(del.statusCode, 200);
    const after = await eventually('objects 2', 10_000, async () => {
      const m = await scrape();
      return sum(m, 'kube_cache_proxy_watch_cache_objects', gr) === 2 ? m : undefined;
    });
    assert.equal(sum(after, 'kube_cache_proxy_watch_cache_events_dispatched_total', gr) - dispatched0, 4);
  });

  test("no credential appears in the debug logs (proxy token, client key, clients' tokens)", async () => {
    // Client requests carrying their own tokens, forwarded upstream: a write, a 403, a 401.
    const limited = { authorization: `Bearer ${f.tokens.limited}` };
    const cm = await request(`${proxy.url}/api/v1/namespaces/${f.limitedNamespace}/configmaps`, {
      method: 'POST',
      headers: { ...limited, 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { generateName: 'ops-' }, data: { k: 'v' } }),
    });
    await cm.body.dump();
    assert.equal(cm.statusCode, 201);
    assert.equal(
      (
        await get(`${proxy.url}/api/v1/namespaces/kube-system/secrets`, {
          authorization: `Bearer ${f.tokens.none}`,
        })
      ).status,
      403,
    );
    assert.equal(
      (
        await get(`${proxy.url}/api/v1/namespaces/default/pods`, {
          authorization: 'Bearer not-a-valid-token',
        })
      ).status,
      401,
    );
    // Issue 10: another identity than the proxy's is no longer served from the cache: the
    // namespace-limited token gets the apiserver's own 403 for a cluster-wide list (was 200).
    const wide = await get(`${proxy.url}/api/v1/configmaps?resourceVersion=0`, limited);
    assert.equal(wide.status, 403);
    assert.match(wide.body, /cannot list resource \\"configmaps\\" in API group \\"\\" at the cluster scope/);
    assert.equal(await proxy.stop(), 0);
    // The same with a client-certificate identity (inline key), to catch a key in any log line.
    const certProxy = await startProxy(f, {
      run: 'cli',
      kubeconfig: writeInlineKubeconfig(join(tmp, 'cert.kubeconfig'), f, {
        'client-certificate-data': b64(readFileSync(adminUser['client-certificate']!, 'utf8')),
        'client-key-data': b64(adminKeyPem),
      }),
      resources: 'configmaps',
      args: ['--log-level', 'debug'],
    });
    await eventually('cert proxy ready', 30_000, async () =>
      (await get(`${certProxy.ops}/readyz`)).status === 200 ? true : undefined,
    );
    assert.equal((await get(`${certProxy.url}/api/v1/namespaces/${ns}/configmaps`)).status, 200);
    assert.equal((await get(`${certProxy.url}/api/v1/namespaces/${ns}/secrets`)).status, 200);
    assert.equal(await certProxy.stop(), 0);
    const out = proxy.stdout() + certProxy.stdout();
    assert.ok(out.split('\n').length > 10, 'debug logs were written');
    const secrets: Record<string, string> = {
      'admin token': f.tokens.admin,
      'limited token': f.tokens.limited,
      'none token': f.tokens.none,
      'invalid client token': 'not-a-valid-token',
      'client key (base64)': b64(adminKeyPem).slice(0, 40),
    };
    // Every line of the PEM body, so a key logged in any encoding-preserving form is caught.
    for (const [i, line] of adminKeyPem.split('\n').entries()) {
      if (line.length >= 40 && !line.startsWith('-----')) secrets[`client key line ${i}`] = line;
    }
    for (const [what, secret] of Object.entries(secrets)) {
      assert.equal(out.includes(secret), false, `${what} found in the proxy's logs`);
    }
  });
});
