import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { MockAgent } from 'undici';
import { encodeContinue } from '../../../src/apimachinery/continue-token.ts';
import { RequestFilter } from '../../../src/auth/request-filter.ts';
import { createMetrics } from '../../../src/ops/metrics.ts';
import {
  buildServer,
  IDLE_TIMEOUT_MS,
  READ_HEADER_TIMEOUT_MS,
  type ServerOptions,
} from '../../../src/server/app.ts';
import type { UpstreamTarget } from '../../../src/server/upstream-target.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { FakeCache, fakeCodec, mockServer, pod, podsInfo } from '../../support/fake-cache.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { k8sProtobuf, objectMeta, pbField } from '../../support/protobuf-wire.ts';
import { rawConnect, rawRequest, silentConnection } from '../../support/raw-http.ts';

const ORIGIN = 'https://apiserver.test:6443';
/** What {@link echoUpstream} answers without `rv`. */
const UPSTREAM = { upstream: true, metadata: { resourceVersion: '1' } };

function setup(over: Partial<ServerOptions> = {}) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const upstreamPool = agent.get(ORIGIN);
  const upstream: UpstreamTarget = {
    server: new URL(ORIGIN),
    dispatcher: agent,
    longRunningDispatcher: agent,
    authorization: () => 'Bearer proxy-token',
  };
  const cache = new FakeCache();
  cache.objects = [pod('a', 'p1', 7, { app: 'x' }), pod('a', 'p2', 8), pod('b', 'p3', 9, { app: 'x' })];
  const clock = new FakeClock();
  const server = buildServer({
    upstream,
    caches: [cache],
    codec: fakeCodec,
    consistentReads: 'cache',
    logger: silentLogger,
    clock,
    random: () => 0.5,
    ...over,
  });
  return { server, app: server.app, cache, upstreamPool, agent, clock };
}

/** Registers an upstream answer that echoes what it received. */
function echoUpstream(
  pool: ReturnType<MockAgent['get']>,
  method: string,
  path: string | RegExp,
  status = 200,
  rv = '',
) {
  const seen: { headers: Record<string, string>; body: string; path: string }[] = [];
  pool
    .intercept({ method, path: typeof path === 'string' ? path : (p: string) => path.test(p) })
    .reply((o) => {
      seen.push({ headers: o.headers as Record<string, string>, body: String(o.body ?? ''), path: o.path });
      const data = rv
        ? JSON.stringify({ kind: 'Pod', metadata: { resourceVersion: rv } })
        : // A real LIST/GET answer carries an RV (the proxy records it: issue 11 item 2); older than the cache's.
          '{"upstream":true,"metadata":{"resourceVersion":"1"}}';
      return {
        statusCode: status,
        data,
        responseOptions: {
          headers: {
            'content-type': 'application/json',
            warning: '299 - "deprecated"',
            connection: 'x-hop',
            'x-hop': '1',
          },
        },
      };
    });
  return seen;
}

describe('serving from the cache', () => {
  it('LIST at RV=0 answers the snapshot, per namespace, with the list encoding', async () => {
    const { app, cache } = setup();
    const r = await app.inject({ method: 'GET', url: '/api/v1/namespaces/a/pods?resourceVersion=0&limit=1' });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    const body = JSON.parse(r.body);
    assert.equal(body.kind, 'PodList');
    assert.equal(body.metadata.resourceVersion, '10');
    assert.deepEqual(
      body.items.map((i: { metadata: { name: string } }) => i.metadata.name),
      ['p1', 'p2'],
    );
    assert.deepEqual(cache.calls, ['list ns=a exact=']);
  });

  it('LIST applies label and field selectors cluster-wide', async () => {
    const { app } = setup();
    const r = await app.inject({
      method: 'GET',
      url: '/api/v1/pods?resourceVersion=0&labelSelector=app%3Dx',
    });
    assert.deepEqual(
      JSON.parse(r.body).items.map((i: { metadata: { name: string } }) => i.metadata.name),
      ['p1', 'p3'],
    );
    const f = await app.inject({
      method: 'GET',
      url: '/api/v1/pods?resourceVersion=0&fieldSelector=metadata.name%3Dp2',
    });
    assert.deepEqual(
      JSON.parse(f.body).items.map((i: { metadata: { name: string } }) => i.metadata.name),
      ['p2'],
    );
  });

  it('LIST RV="" is served when live and fresh, forwarded when the stream is not live', async () => {
    const { app, cache, upstreamPool } = setup();
    const r = await app.inject({ method: 'GET', url: '/api/v1/pods' });
    assert.equal(JSON.parse(r.body).kind, 'PodList');
    cache.live = false;
    const seen = echoUpstream(upstreamPool, 'GET', '/api/v1/pods');
    const u = await app.inject({ method: 'GET', url: '/api/v1/pods' });
    assert.deepEqual(JSON.parse(u.body), UPSTREAM);
    assert.equal(seen.length, 1);
  });

  it('--consistent-reads=upstream forwards RV="" but serves RV=0 from the cache', async () => {
    const { app, upstreamPool } = setup({ consistentReads: 'upstream' });
    echoUpstream(upstreamPool, 'GET', '/api/v1/pods');
    assert.deepEqual(JSON.parse((await app.inject({ url: '/api/v1/pods' })).body), UPSTREAM);
    assert.equal(
      JSON.parse((await app.inject({ url: '/api/v1/pods?resourceVersion=0' })).body).kind,
      'PodList',
    );
  });

  it('read-your-writes: after a write returned RV 50, RV="" waits for the cache to reach 50', async () => {
    const { app, cache, upstreamPool, server } = setup();
    echoUpstream(upstreamPool, 'POST', '/api/v1/namespaces/a/pods', 201, '50');
    const w = await app.inject({
      method: 'POST',
      url: '/api/v1/namespaces/a/pods',
      headers: { 'content-type': 'application/json' },
      payload: '{"metadata":{"name":"n"}}',
    });
    assert.equal(w.statusCode, 201);
    assert.equal(server.writes.required('pods.'), 50n);
    // The cache does not catch up → forwarded.
    echoUpstream(upstreamPool, 'GET', '/api/v1/namespaces/a/pods');
    const r1 = await app.inject({ url: '/api/v1/namespaces/a/pods' });
    assert.deepEqual(JSON.parse(r1.body), UPSTREAM);
    assert.deepEqual(cache.calls, ['waitUntilFresh 50']);
    // The cache catches up → served from it.
    cache.becomesFresh = true;
    const r2 = await app.inject({ url: '/api/v1/namespaces/a/pods' });
    assert.equal(JSON.parse(r2.body).metadata.resourceVersion, '50');
  });

  it('issue 11 item 3: read-your-writes holds for gzip, protobuf and CBOR write answers', async () => {
    const { app, cache, upstreamPool, server, clock } = setup();
    const post = async (data: Buffer, headers: Record<string, string>) => {
      upstreamPool
        .intercept({ method: 'POST', path: '/api/v1/namespaces/a/pods' })
        .reply(201, data, { headers });
      const w = await app.inject({
        method: 'POST',
        url: '/api/v1/namespaces/a/pods',
        headers: { 'content-type': 'application/json' },
        payload: '{}',
      });
      assert.equal(w.statusCode, 201);
      assert.deepEqual(w.rawPayload, data, 'the client gets the bytes unchanged');
    };
    // Over 128 KiB the apiserver gzips (Go clients accept gzip implicitly); two members here.
    const big = JSON.stringify({
      kind: 'Pod',
      metadata: { name: 'n', resourceVersion: '50' },
      data: 'x'.repeat(200_000),
    });
    await post(Buffer.concat([gzipSync(big.slice(0, 1000)), gzipSync(big.slice(1000))]), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    assert.equal(server.writes.required('pods.'), 50n);
    // A protobuf answer (client-go's default for built-in kinds).
    await post(k8sProtobuf('v1', 'Pod', pbField(1, objectMeta('n', 'a', 'u', '60'))), {
      'content-type': 'application/vnd.kubernetes.protobuf',
    });
    assert.equal(server.writes.required('pods.'), 60n);
    // CBOR: the RV cannot be learnt, so the next consistent read goes upstream (never "assume seen")…
    cache.rv = 60n;
    await post(Buffer.from([0xd9, 0xd9, 0xf7, 0xa0]), { 'content-type': 'application/cbor' });
    await clock.step(1);
    const seen = echoUpstream(upstreamPool, 'GET', '/api/v1/namespaces/a/pods', 200, '70');
    const r1 = await app.inject({ url: '/api/v1/namespaces/a/pods' });
    assert.equal(JSON.parse(r1.body).metadata.resourceVersion, '70');
    assert.equal(seen.length, 1);
    // …whose answer (a request started after the write) tells the RV the cache must reach.
    cache.rv = 70n;
    const r2 = await app.inject({ url: '/api/v1/namespaces/a/pods' });
    assert.equal(JSON.parse(r2.body).kind, 'PodList', r2.body);
    assert.equal(seen.length, 1);
  });

  it('issue 13: a scoped cache tracks only writes that may reach it, and outside-scope reads show it nothing', async () => {
    const scoped = new FakeCache({ ...podsInfo, scope: { labelSelector: 'app=x' } });
    scoped.objects = [pod('a', 'p1', 7, { app: 'x' })];
    const { app, upstreamPool, server } = setup({ caches: [scoped] });
    const write = async (method: string, path: string, answer: object) => {
      upstreamPool
        .intercept({ method, path })
        .reply(200, JSON.stringify(answer), { headers: { 'content-type': 'application/json' } });
      const w = await app.inject({
        method: method as 'POST',
        url: path,
        payload: '{}',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(w.statusCode, 200);
    };
    const podAt = (name: string, rv: string, labels?: Record<string, string>) => ({
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: { name, namespace: 'a', resourceVersion: rv, ...(labels ? { labels } : {}) },
    });
    // A pod created outside the scope: the scoped watch never sees it; not tracked.
    await write('POST', '/api/v1/namespaces/a/pods', podAt('other', '50'));
    assert.equal(server.writes.required('pods.'), 0n);
    // One created inside the scope: tracked (read-your-writes).
    await write('POST', '/api/v1/namespaces/a/pods', podAt('mine', '60', { app: 'x' }));
    assert.equal(server.writes.required('pods.'), 60n);
    // An update moving a held object out of the scope: the cache sees its DELETED event; tracked.
    await write('PUT', '/api/v1/namespaces/a/pods/p1', podAt('p1', '70'));
    assert.equal(server.writes.required('pods.'), 70n);
    // A LIST outside the scope (another selector) shows RVs the cache never reaches: not recorded.
    echoUpstream(upstreamPool, 'GET', '/api/v1/pods?resourceVersion=0', 200, '99');
    const r = await app.inject({ url: '/api/v1/pods?resourceVersion=0' });
    assert.equal(r.statusCode, 200);
    assert.equal(server.writes.shownRV('pods.'), 0n);
    // A GET of an object the cache lacks whose answer is outside the scope: not recorded either.
    upstreamPool
      .intercept({ method: 'GET', path: '/api/v1/namespaces/a/pods/other?resourceVersion=0' })
      .reply(200, JSON.stringify(podAt('other', '98')), { headers: { 'content-type': 'application/json' } });
    assert.equal(
      (await app.inject({ url: '/api/v1/namespaces/a/pods/other?resourceVersion=0' })).statusCode,
      200,
    );
    assert.equal(server.writes.shownRV('pods.'), 0n);
    // …but one inside the scope (its event not yet in the cache) is: the cache must reach it.
    upstreamPool
      .intercept({ method: 'GET', path: '/api/v1/namespaces/a/pods/new?resourceVersion=0' })
      .reply(200, JSON.stringify(podAt('new', '97', { app: 'x' })), {
        headers: { 'content-type': 'application/json' },
      });
    assert.equal(
      (await app.inject({ url: '/api/v1/namespaces/a/pods/new?resourceVersion=0' })).statusCode,
      200,
    );
    assert.equal(server.writes.shownRV('pods.'), 97n);
  });

  it('issue 11 item 5: --namespace mode tracks writes to the cached namespace only (no stall for others)', async () => {
    const { app, cache, upstreamPool, server } = setup({ namespace: 'a' });
    // A write to another namespace: the namespaced cache never sees its event, so tracking it
    // made every RV="" read in `a` wait 3 s and go upstream until the next upstream bookmark.
    echoUpstream(upstreamPool, 'POST', '/api/v1/namespaces/b/pods', 201, '50');
    const other = await app.inject({
      method: 'POST',
      url: '/api/v1/namespaces/b/pods',
      headers: { 'content-type': 'application/json' },
      payload: '{"metadata":{"name":"n"}}',
    });
    assert.equal(other.statusCode, 201);
    assert.equal(server.writes.required('pods.'), 0n);
    const r = await app.inject({ url: '/api/v1/namespaces/a/pods' });
    assert.equal(JSON.parse(r.body).metadata.resourceVersion, '10');
    assert.deepEqual(cache.calls, ['list ns=a exact=']);
    // A write to the cached namespace is still tracked (read-your-writes).
    echoUpstream(upstreamPool, 'POST', '/api/v1/namespaces/a/pods', 201, '60');
    await app.inject({
      method: 'POST',
      url: '/api/v1/namespaces/a/pods',
      headers: { 'content-type': 'application/json' },
      payload: '{"metadata":{"name":"n"}}',
    });
    assert.equal(server.writes.required('pods.'), 60n);
  });

  it('read-your-writes for a DELETE answered by a Status without RV: fresh once the object is gone', async () => {
    const { app, cache, upstreamPool, server, clock } = setup();
    upstreamPool
      .intercept({ method: 'DELETE', path: '/api/v1/namespaces/a/pods/p1' })
      .reply(
        200,
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"p1","kind":"pods","uid":"uid-p1"}}',
        { headers: { 'content-type': 'application/json' } },
      );
    const d = await app.inject({ method: 'DELETE', url: '/api/v1/namespaces/a/pods/p1' });
    assert.equal(d.statusCode, 200);
    assert.deepEqual(
      server.writes.pendingDeletes('pods.', clock.now()).map((x) => [x.namespace, x.name, x.uid]),
      [['a', 'p1', 'uid-p1']],
    );
    // Still in the cache and no further event within the wait → forwarded.
    echoUpstream(upstreamPool, 'GET', '/api/v1/namespaces/a/pods');
    assert.deepEqual(JSON.parse((await app.inject({ url: '/api/v1/namespaces/a/pods' })).body), {
      ...UPSTREAM,
    });
    assert.deepEqual(cache.calls, ['waitUntilFresh 11']);
    // The same name re-created (another uid) does not count as the deleted object.
    cache.objects[0] = { ...pod('a', 'p1', 11), object: { ...pod('a', 'p1', 11).object } };
    cache.objects[0].object.metadata.uid = 'uid-new';
    const r = await app.inject({ url: '/api/v1/namespaces/a/pods' });
    assert.equal(JSON.parse(r.body).kind, 'PodList');
  });

  it('LIST RV=N NotOlderThan forwards when the cache stays behind', async () => {
    const { app, upstreamPool, cache } = setup();
    echoUpstream(upstreamPool, 'GET', '/api/v1/pods?resourceVersion=99');
    const r = await app.inject({ url: '/api/v1/pods?resourceVersion=99' });
    assert.deepEqual(JSON.parse(r.body), UPSTREAM);
    assert.deepEqual(cache.calls, ['waitUntilFresh 99']);
  });

  it('LIST Exact inside the window is served at that RV, outside it is forwarded', async () => {
    const { app, upstreamPool } = setup();
    const r = await app.inject({ url: '/api/v1/pods?resourceVersion=6&resourceVersionMatch=Exact' });
    assert.equal(JSON.parse(r.body).metadata.resourceVersion, '6');
    echoUpstream(upstreamPool, 'GET', '/api/v1/pods?resourceVersion=2&resourceVersionMatch=Exact');
    const u = await app.inject({ url: '/api/v1/pods?resourceVersion=2&resourceVersionMatch=Exact' });
    assert.deepEqual(JSON.parse(u.body), UPSTREAM);
  });

  it('an unsynced resource waits, then forwards; never an empty list', async () => {
    const { app, upstreamPool, cache } = setup();
    cache.synced = false;
    echoUpstream(upstreamPool, 'GET', '/api/v1/pods?resourceVersion=0');
    const r = await app.inject({ url: '/api/v1/pods?resourceVersion=0' });
    assert.deepEqual(JSON.parse(r.body), UPSTREAM);
    assert.deepEqual(cache.calls, ['waitSynced']);
  });

  it('pages from the cache: limit at RV="" / RV=N (legacy exact) / continue tokens it can decode', async () => {
    const { app, cache } = setup();
    const token = encodeContinue('a/p1', 5n); // the apiserver's own token format
    for (const [url, call] of [
      ['/api/v1/pods?limit=5', 'list ns= exact= limit=5'],
      ['/api/v1/pods?limit=5&resourceVersion=7', 'list ns= exact=7 limit=5'],
      ['/api/v1/pods?limit=5&resourceVersion=7&resourceVersionMatch=NotOlderThan', 'list ns= exact= limit=5'],
      [`/api/v1/pods?limit=5&continue=${token}`, 'list ns= exact= limit=5 continue=5:a/p1\u0000'],
    ] as const) {
      cache.calls.length = 0;
      const r = await app.inject({ url });
      assert.equal(r.statusCode, 200, `${url}: ${r.body}`);
      assert.ok(cache.calls.includes(call), `${url}: ${JSON.stringify(cache.calls)}`);
    }
  });

  it('undecodable continue tokens, unknown field selectors and odd RVs are forwarded', async () => {
    const { app, upstreamPool } = setup();
    for (const url of [
      '/api/v1/pods?continue=abc',
      '/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3Dn1',
      '/api/v1/pods?resourceVersion=abc',
      '/api/v1/pods?resourceVersion=007',
    ]) {
      echoUpstream(upstreamPool, 'GET', url);
      const r = await app.inject({ url });
      assert.deepEqual(JSON.parse(r.body), UPSTREAM, url);
    }
  });

  it('GET answers the object bytes verbatim and a newline, or the apiserver-shaped 404', async () => {
    const { app, cache } = setup();
    const r = await app.inject({ url: '/api/v1/namespaces/a/pods/p1' });
    assert.equal(r.statusCode, 200);
    // The object's bytes plus the `\n` the apiserver's JSON serializer ends every answer with.
    assert.equal(r.body, `${cache.objects[0]!.raw.toString()}\n`);
    const n = await app.inject({ url: '/api/v1/namespaces/a/pods/nope' });
    assert.equal(n.statusCode, 404);
    // Byte-identical to the apiserver's answer (key order included; no `group` for core).
    assert.equal(
      n.body,
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \\"nope\\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404}\n',
    );
  });

  it('WATCH streams the cache lines and passes the decoded options', async () => {
    const { app, cache } = setup();
    const pending = app.inject({
      url: '/api/v1/namespaces/a/pods?watch=1&resourceVersion=7&allowWatchBookmarks=true',
    });
    await new Promise((r) => setImmediate(r));
    const w = cache.watches[0]!;
    assert.deepEqual(w.q, {
      labelSelector: {},
      fieldSelector: {},
      allowWatchBookmarks: true,
      // No timeoutSeconds: the jittered default, 30 min × (random 0.5 + 1).
      timeoutMs: 2_700_000,
      namespace: 'a',
      resourceVersion: 7n,
    });
    w.stream.write('{"type":"ADDED","object":{}}\n');
    w.stream.end('{"type":"MODIFIED","object":{}}\n');
    const r = await pending;
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['transfer-encoding'], 'chunked');
    assert.equal(r.body, '{"type":"ADDED","object":{}}\n{"type":"MODIFIED","object":{}}\n');
  });

  it('WATCH at RV unset is a watch-list (sendInitialEvents defaulted) and ends at timeoutSeconds', async () => {
    const { app, cache, clock } = setup();
    const pending = app.inject({ url: '/api/v1/pods?watch=true&timeoutSeconds=30' });
    await new Promise((r) => setImmediate(r));
    assert.equal(cache.watches[0]!.q.sendInitialEvents, true);
    assert.deepEqual(clock.pendingDelays(), [30_000]);
    await clock.step(30_000);
    const r = await pending;
    assert.equal(r.statusCode, 200);
    assert.equal(cache.watches[0]!.stream.writableEnded, true);
  });

  it('WATCH without timeoutSeconds gets the jittered default [1800 s, 3600 s)', async () => {
    const { app, server, clock } = setup();
    const pending = app.inject({ url: '/api/v1/pods?watch=true&resourceVersion=0' });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(clock.pendingDelays(), [2_700_000]);
    await server.shutdown();
    assert.equal((await pending).statusCode, 200);
  });
});

describe('metrics', () => {
  it('counts requests by verb, served_from and reason, and read waits by result', async () => {
    const metrics = createMetrics();
    const { app, upstreamPool } = setup({ metrics });
    await app.inject({ url: '/api/v1/namespaces/a/pods?resourceVersion=0' });
    echoUpstream(upstreamPool, 'GET', '/api/v1/pods?resourceVersion=99');
    await app.inject({ url: '/api/v1/pods?resourceVersion=99' });
    await app.inject({ url: '/api/v1/namespaces/a/pods/nope' });
    const text = await metrics.scrape();
    const line = (verb: string, code: string, from: string, reason = '') =>
      `kube_cache_proxy_requests_total{verb="${verb}",group="",version="v1",resource="pods",subresource="",served_from="${from}",code="${code}",reason="${reason}"} 1`;
    assert.ok(text.includes(line('LIST', '200', 'cache')), text);
    assert.ok(text.includes(line('LIST', '200', 'upstream', 'freshness-timeout')));
    assert.ok(text.includes(line('GET', '404', 'cache')));
    assert.match(
      text,
      /kube_cache_proxy_watch_cache_read_wait_seconds_count\{group="",resource="pods",result="timeout"\} 1/,
    );
  });
});

describe('validation errors (apiserver wording)', () => {
  const cases: [string, number, string][] = [
    ['/api/v1/pods?limit=abc', 400, 'strconv.ParseInt: parsing "abc": invalid syntax'],
    ['/api/v1/pods?timeoutSeconds=1.5', 400, 'strconv.ParseInt: parsing "1.5": invalid syntax'],
    [
      '/api/v1/pods?resourceVersionMatch=NotOlderThan',
      422,
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided',
    ],
    [
      '/api/v1/pods?resourceVersion=1&resourceVersionMatch=Foo',
      422,
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Foo": supported values: "Exact", "NotOlderThan", ""',
    ],
    [
      '/api/v1/pods?resourceVersionMatch=Exact',
      422,
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided',
    ],
    [
      '/api/v1/pods?sendInitialEvents=true',
      422,
      'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list',
    ],
    [
      '/api/v1/pods?watch=1&resourceVersion=5&resourceVersionMatch=Exact',
      422,
      'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided, resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]',
    ],
    ['/api/v1/pods?labelSelector=%21%21', 400, 'unable to parse requirement: !!'],
  ];
  for (const [url, code, message] of cases) {
    it(url, async () => {
      const { app } = setup();
      const r = await app.inject({ url });
      assert.equal(r.statusCode, code);
      const s = JSON.parse(r.body);
      assert.equal(s.message, message);
      assert.equal(s.code, code);
    });
  }
});

describe('attack: long request lines', () => {
  it('a 64 KiB label selector is served (the apiserver accepts up to 1 MiB; was 431 from Node)', async () => {
    const { agent, server } = mockServer([pod('a', 'p1', 7, { app: 'x' })]);
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (server.app.server.address() as AddressInfo).port;
      // The fake codec only parses `k=v` selectors; the size of the request line is what matters
      // (a real `app in (v0,…,v11999)` selector, 73 KB, was answered 431 by the proxy). The padding
      // is a selector term: an unknown parameter would go upstream (issue 29).
      const path = `/api/v1/namespaces/a/pods?resourceVersion=0&labelSelector=app%3Dx,pad%3D${'v'.repeat(70_000)}`;
      assert.ok(path.length > 64 * 1024);
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(status, 200);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('attack: Upgrade headers that are not stream protocols', () => {
  it('`Upgrade: h2c` (curl --http2) is served normally; `websocket` and SPDY are tunnelled upstream', async () => {
    const { agent, server } = mockServer([pod('a', 'p1', 7)]);
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (server.app.server.address() as AddressInfo).port;
      const status = (upgrade: string) =>
        new Promise<number>((resolve, reject) => {
          const req = request({
            host: '127.0.0.1',
            port,
            path: '/api/v1/namespaces/a/pods?resourceVersion=0',
            agent: false,
            headers: { connection: 'Upgrade', upgrade },
          });
          req.on('response', (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end();
        });
      assert.equal(await status('h2c'), 200);
      // Tunnelled to the (mock, not upgrading) upstream, not served from the cache: 503.
      assert.equal(await status('websocket'), 503);
      assert.equal(await status('SPDY/3.1'), 503);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe("connections that send nothing: closed as the apiserver's ReadHeaderTimeout closes them", () => {
  it("defaults to the apiserver's 32 s header timeout and 90 s idle timeout", () => {
    // k8s.io/apiserver secure_serving.go: ReadHeaderTimeout 32 s, IdleTimeout 90 s.
    assert.equal(READ_HEADER_TIMEOUT_MS, 32_000);
    assert.equal(IDLE_TIMEOUT_MS, 90_000);
    const { app } = setup();
    assert.equal(app.server.headersTimeout, 32_000);
    assert.equal(app.server.keepAliveTimeout, 90_000);
    assert.equal(app.server.requestTimeout, 0);
  });

  it('closes a connection that never sends a byte after the header timeout, without an answer', async () => {
    const { app } = setup({ readHeaderTimeoutMs: 300 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const r = await silentConnection(url, 5000);
      assert.equal(r.sent, '', 'Go writes nothing on a header timeout');
      // Closed by the server (silentConnection rejects when it gives up first), never before the
      // timeout (timers do not fire early: no load makes this flake).
      assert.ok(r.closedAfterMs >= 280, `closed after ${r.closedAfterMs} ms`);
    } finally {
      await app.close();
    }
  });

  it('closes a connection stuck in the middle of its request line the same way; a whole request is answered', async () => {
    const { app } = setup({ readHeaderTimeoutMs: 300 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const s = await rawConnect({ url });
      let sent = '';
      s.on('data', (c: Buffer) => {
        sent += c.toString();
      });
      const t0 = performance.now();
      const closed = new Promise<number>((resolve) => s.once('close', () => resolve(performance.now() - t0)));
      s.write('GET /api/v1/namespaces/a/pods?resourceVersion=0 HT');
      const ms = await closed;
      assert.equal(sent, '');
      assert.ok(ms >= 280, `closed after ${ms} ms`);

      const ok = await rawConnect({ url });
      let answer = '';
      ok.on('data', (c: Buffer) => {
        answer += c.toString();
      });
      ok.write('GET /api/v1/namespaces/a/pods?resourceVersion=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await new Promise((resolve) => setTimeout(resolve, 600));
      assert.match(answer, /^HTTP\/1\.1 200 /);
      assert.equal(ok.destroyed, false, 'an answered connection stays open (idle timeout 90 s)');
      ok.destroy();
    } finally {
      await app.close();
    }
  });
});

describe('the path and method filter: before the cache, the apiserver and the upgrade tunnel', () => {
  const filtered = () => {
    const metrics = createMetrics();
    const s = setup({
      filter: new RequestFilter({
        acceptPaths: ['^.*'],
        rejectPaths: ['^/api/.*/pods/.*/exec', '^/api/.*/pods/.*/attach', '/secrets'],
        rejectMethods: ['^DELETE$'],
      }),
      filterMetrics: metrics,
    });
    return { ...s, metrics };
  };

  it('a rejected path or method is 403 Status, served neither from the cache nor upstream', async () => {
    const { app, metrics, upstreamPool } = filtered();
    // No interceptor is registered: anything sent upstream would fail the request with 503.
    const list = await app.inject({ method: 'GET', url: '/api/v1/namespaces/a/secrets?resourceVersion=0' });
    assert.equal(list.statusCode, 403);
    assert.equal(list.headers['content-type'], 'application/json');
    assert.deepEqual(list.json(), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'forbidden: kube-cache-proxy refuses GET "/api/v1/namespaces/a/secrets": the path matches --reject-paths "/secrets"',
      reason: 'Forbidden',
      details: {},
      code: 403,
    });
    const del = await app.inject({ method: 'DELETE', url: '/api/v1/namespaces/a/pods/p1' });
    assert.equal(del.statusCode, 403);
    assert.match(del.json().message, /the method matches --reject-methods "\^DELETE\$"$/);
    // An absolute-form target is filtered by its path, as the apiserver routes it.
    const abs = await app.inject({
      method: 'POST',
      url: 'http://127.0.0.1:8001/api/v1/namespaces/a/pods/p1/exec?command=true',
    });
    assert.equal(abs.statusCode, 403);
    // A cached read still comes from the cache (nothing upstream was needed).
    const ok = await app.inject({ method: 'GET', url: '/api/v1/namespaces/a/pods?resourceVersion=0' });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().items.length, 2);
    const seen = echoUpstream(upstreamPool, 'POST', '/api/v1/namespaces/a/pods/p1/portforward');
    const pf = await app.inject({ method: 'POST', url: '/api/v1/namespaces/a/pods/p1/portforward' });
    assert.equal(pf.statusCode, 200, 'port-forward is not in the rejected paths: passed upstream');
    assert.equal(seen.length, 1);
    const filters = (await metrics.filteredRequests.get()).values.map((v) => `${v.labels.filter} ${v.value}`);
    assert.deepEqual(filters.sort(), ['reject-methods 1', 'reject-paths 2']);
    const refused = (await metrics.refusedRequests.get()).values.map((v) => `${v.labels.code} ${v.value}`);
    assert.deepEqual(refused, ['403 3']);
  });

  it('an exec Upgrade (SPDY, WebSocket) is answered 403 Status on the socket, never tunnelled', async () => {
    const { server, metrics } = filtered();
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const url = `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`;
      for (const upgrade of ['SPDY/3.1', 'websocket']) {
        const a = await rawRequest(
          { url },
          `POST /api/v1/namespaces/a/pods/p1/exec?command=true HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: ${upgrade}`,
        );
        assert.equal(a.status, 403, upgrade);
        assert.deepEqual(
          a.headers.filter(([k]) => k.toLowerCase() === 'content-type'),
          [['content-type', 'application/json']],
        );
        assert.equal(JSON.parse(a.body).reason, 'Forbidden');
        assert.match(JSON.parse(a.body).message, /refuses POST "\/api\/v1\/namespaces\/a\/pods\/p1\/exec"/);
      }
      assert.deepEqual(
        (await metrics.filteredRequests.get()).values.map((v) => `${v.labels.filter} ${v.value}`),
        ['reject-paths 2'],
      );
    } finally {
      await server.shutdown();
    }
  });
});

describe('holdRequestsUntil (a warm start restoring its snapshots)', () => {
  it('a request that arrives before the cache is added waits and is served from it, not passed upstream as not-cached', async () => {
    const { server, app, cache, upstreamPool } = setup({ caches: [] });
    const upstreamSeen = echoUpstream(upstreamPool, 'GET', /\/api\/v1\/namespaces\/a\/pods/);
    const gate = Promise.withResolvers<void>();
    server.holdRequestsUntil(gate.promise);
    const answer = app.inject({ method: 'GET', url: '/api/v1/namespaces/a/pods?resourceVersion=0' });
    // Held: nothing answered yet, nothing sent upstream.
    await new Promise((r) => setImmediate(r));
    server.addCache(cache);
    gate.resolve();
    const r = await answer;
    assert.equal(r.statusCode, 200);
    assert.equal(JSON.parse(r.body).kind, 'PodList');
    assert.deepEqual(cache.calls, ['list ns=a exact=']);
    assert.equal(upstreamSeen.length, 0);
  });

  it('without a hold (or once the gate settled, rejected included) requests for a resource without a cache go upstream', async () => {
    const { server, app, upstreamPool } = setup({ caches: [] });
    const upstreamSeen = echoUpstream(upstreamPool, 'GET', /\/api\/v1\/namespaces\/a\/pods/);
    server.holdRequestsUntil(Promise.reject(new Error('restore failed')));
    const r = await app.inject({ method: 'GET', url: '/api/v1/namespaces/a/pods?resourceVersion=0' });
    assert.equal(r.statusCode, 200);
    assert.equal(JSON.parse(r.body).upstream, true);
    assert.equal(upstreamSeen.length, 1);
  });
});
