/**
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import { createServer, request, type ServerResponse } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { describe, it } from 'node:test';
import { Agent } from 'undici';
import { AccessControl } from '../../../src/auth/access-control.ts';
import type { SubjectAccessReviewAuthorizer } from '../../../src/auth/subject-access-review.ts';
import type { TokenReviewAuthenticator } from '../../../src/auth/token-review.ts';
import { onDemandRequestHook } from '../../../src/on-demand/server-hook.ts';
import { createMetrics } from '../../../src/ops/metrics.ts';
import { buildServer } from '../../../src/server/app.ts';
import { originForm } from '../../../src/server/handle-request.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { until } from '../../support/eventually.ts';
import { FakeCache, fakeCodec, mockServer, pod } from '../../support/fake-cache.ts';
import { logLines } from '../../support/log-lines.ts';
import { prng } from '../../support/prng.ts';
import { metricSum } from '../../support/prometheus-text.ts';
import { randomResourcePath } from '../../support/random-paths.ts';

describe('attack: absolute-form request targets', () => {
  it('GET http://host/api/... is served as its path (the apiserver does; was a 503)', async () => {
    assert.equal(originForm('http://evil.example/api/v1/pods?watch=1'), '/api/v1/pods?watch=1');
    assert.equal(originForm('HTTPS://h:1?x=1'), '/?x=1');
    assert.equal(originForm('/api/v1/pods'), '/api/v1/pods');
    assert.equal(originForm('*'), '*');

    const { agent, server } = mockServer([pod('a', 'p1', 7)]);
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (server.app.server.address() as AddressInfo).port;
      const head = await new Promise<string>((resolve, reject) => {
        const s = connect(port, '127.0.0.1', () =>
          s.write(
            'GET http://evil.example/api/v1/namespaces/a/pods?resourceVersion=0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
          ),
        );
        let data = '';
        s.on('data', (d: Buffer) => {
          data += d.toString();
        });
        s.on('end', () => resolve(data));
        s.on('error', reject);
      });
      assert.match(head, /^HTTP\/1\.1 200 /);
      assert.match(head, /"name":"p1"/);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('attack: query strings are parsed like Go url.ParseQuery', () => {
  it('labelSelector=a%ZZ lists everything (apiserver: 200 unfiltered; the cache said 400)', async () => {
    const { agent, server } = mockServer([pod('a', 'p1', 7, { app: 'x' }), pod('a', 'p2', 8)]);
    try {
      for (const url of [
        '/api/v1/namespaces/a/pods?resourceVersion=0&labelSelector=a%ZZ',
        '/api/v1/namespaces/a/pods?resourceVersion=0&labelSelector=app%3Dx;b%3Dc',
      ]) {
        const r = await server.app.inject({ method: 'GET', url });
        assert.equal(r.statusCode, 200, r.body);
        const names = (JSON.parse(r.body) as { items: { metadata: { name: string } }[] }).items.map(
          (i) => i.metadata.name,
        );
        assert.deepEqual(names, ['p1', 'p2']);
      }
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('attack: watches the cache declines still count against --max-watchers', () => {
  it('a second RV="" watch passed upstream (cache not synced) gets 429 with maxWatchers=1', async () => {
    const held: ServerResponse[] = [];
    const upstream = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      held.push(res);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const agent = new Agent();
    const cache = new FakeCache();
    cache.synced = false;
    const server = buildServer({
      upstream: {
        server: new URL(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`),
        dispatcher: agent,
        longRunningDispatcher: agent,
        authorization: () => undefined,
      },
      caches: [cache],
      codec: fakeCodec,
      consistentReads: 'cache',
      logger: silentLogger,
      maxWatchers: 1,
      syncWaitMs: 0,
    });
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (server.app.server.address() as AddressInfo).port;
    const open: ReturnType<typeof request>[] = [];
    const watch = () =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/api/v1/pods?watch=1', agent: false },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', (err) => (err.message === 'socket hang up' ? undefined : reject(err)));
        req.end();
        open.push(req);
      });
    try {
      assert.equal(await watch(), 200);
      assert.equal(await watch(), 429);
    } finally {
      for (const r of open) r.destroy();
      for (const r of held) r.destroy();
      await server.shutdown();
      await agent.close();
      upstream.closeAllConnections();
      await new Promise((r) => upstream.close(r));
    }
  });
});

describe('issue 11 item 13, issue 29: bounded metric label cardinality', () => {
  it('subresource keeps one segment; resources neither cached nor discovered share the label <other>', async () => {
    const metrics = createMetrics({ processMetrics: false });
    const { agent, server } = mockServer([], { metrics });
    metrics.resourceLabels.known.add({ group: '', version: 'v1', resource: 'pods' }, ['proxy']);
    agent
      .get('https://apiserver.test:6443')
      .intercept({ path: () => true, method: () => true })
      .reply(200, '{}')
      .persist();
    try {
      // Every proxied path made a series of its own (subresource="proxy/x/<i>").
      for (let i = 0; i < 20; i++)
        await server.app.inject({ url: `/api/v1/namespaces/a/pods/p1/proxy/x/${i}` });
      // Unknown resources (a scanner, a typo loop) each made a series too.
      for (let i = 0; i < 20; i++) await server.app.inject({ url: `/api/v1/thing${i}` });
      // A request is recorded once its response closed: wait for all 40.
      const total = async () => (await metrics.requests.get()).values.reduce((n, v) => n + v.value, 0);
      await until('40 requests counted', async () => (await total()) >= 40);
      const series = (await metrics.requests.get()).values.map((v) => {
        const l = v.labels;
        return `${l.verb} ${l.group}/${l.version}/${l.resource}/${l.subresource} ${v.value}`;
      });
      assert.deepEqual(series.sort(), ['GET /v1/pods/proxy 20', 'LIST <other>/<other>/<other>/ 20']);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

/** A gate: TokenReview knows `good` as alice; the SubjectAccessReview allows namespace `a` only. */
const access = () =>
  new AccessControl({
    delegatedAuth: true,
    impersonateCertificateClients: false,
    tokens: {
      authenticate: async (t: string) =>
        t === 'good'
          ? {
              authenticated: true,
              user: { username: 'alice', uid: '', groups: [], extra: {} },
              cached: false,
            }
          : { authenticated: false, error: '', cached: false },
    } as unknown as TokenReviewAuthenticator,
    authorizer: {
      authorize: async (_u: unknown, a: { namespace?: string }) => ({
        allowed: a.namespace === 'a',
        reason: '',
        cached: a.namespace !== 'a',
      }),
    } as unknown as SubjectAccessReviewAuthorizer,
  });

describe('issue 10: the admit step (who asks)', () => {
  const run = async (url: string, headers: Record<string, string>) => {
    const { logger, lines: logged } = logLines('debug');
    const lines = () => logged.filter((l) => l.msg === 'request');
    const metrics = createMetrics({ processMetrics: false });
    const { agent, server } = mockServer([pod('a', 'p1', 7), pod('b', 'p2', 8)], {
      access: access(),
      logger,
      metrics,
    });
    try {
      const r = await server.app.inject({ method: 'GET', url, headers });
      await until('a log line', () => lines().length > 0);
      const samples = (await metrics.requests.get()).values.map((v) => v.labels);
      const refused = (await metrics.refusedRequests.get()).values.map((v) => `${v.labels.code} ${v.value}`);
      return { r, line: lines()[0]!, samples, refused };
    } finally {
      await server.shutdown();
      await agent.close();
    }
  };

  it('an allowed cached read is served from the cache; the log line names the user and the decision', async () => {
    const { r, line, samples } = await run('/api/v1/namespaces/a/pods?resourceVersion=0', {
      authorization: 'Bearer good',
    });
    assert.equal(r.statusCode, 200);
    assert.deepEqual(
      { user: line.user, decision: line.decision, cached: line.cached, served_from: line.served_from },
      { user: 'alice', decision: 'allow', cached: false, served_from: 'cache' },
    );
    assert.equal(samples[0]!.served_from, 'cache');
    assert.equal(JSON.stringify(line).includes('good'), false, 'no token in the log line');
  });

  it("a denied one is the apiserver's 403, logged with decision=deny, counted as refused only (issue 29)", async () => {
    const { r, line, samples, refused } = await run('/api/v1/namespaces/b/pods?resourceVersion=0', {
      authorization: 'Bearer good',
    });
    assert.equal(r.statusCode, 403);
    assert.equal(
      r.json().message,
      'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "b"',
    );
    assert.deepEqual(
      { decision: line.decision, cached: line.cached, code: line.code },
      { decision: 'deny', cached: true, code: 403 },
    );
    assert.deepEqual(samples, [], 'a refused request makes no series of requests_total');
    assert.deepEqual(refused, ['403 1']);
  });

  it('an invalid token is 401; a watch denied is a plain 403 response', async () => {
    assert.equal((await run('/api/v1/pods', { authorization: 'Bearer bad' })).r.statusCode, 401);
    const w = await run('/api/v1/namespaces/b/pods?watch=1', { authorization: 'Bearer good' });
    assert.equal(w.r.statusCode, 403);
    assert.equal(w.r.json().kind, 'Status');
  });
});

describe('issue 15 attack: only admitted requests reach the on-demand manager', () => {
  it('a client refused 401 (bad token) or 403, by the proxy or by the apiserver, starts no cache and is no use; one answered 2xx is told with its reason', async () => {
    const told: string[] = [];
    const { agent, server } = mockServer([pod('a', 'p1', 7)], {
      access: access(),
      hooks: [
        onDemandRequestHook({
          request: (info, reason, verb) =>
            told.push(`${verb} ${info.resource} ${info.namespace} ${reason ?? ''}`),
          trackWatch: () => () => {},
        }),
      ],
    });
    agent
      .get('https://apiserver.test:6443')
      .intercept({ path: '/api/v1/namespaces/a/configmaps', method: 'GET' })
      .reply(200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '9' }, items: [] });
    agent
      .get('https://apiserver.test:6443')
      .intercept({ path: '/api/v1/namespaces/a/secrets', method: 'GET' })
      .reply(403, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403 });
    try {
      const bad = await server.app.inject({
        method: 'GET',
        url: '/api/v1/namespaces/a/configmaps',
        headers: { authorization: 'Bearer bad' },
      });
      assert.equal(bad.statusCode, 401);
      const denied = await server.app.inject({
        method: 'GET',
        url: '/api/v1/namespaces/b/pods?resourceVersion=0',
        headers: { authorization: 'Bearer good' },
      });
      assert.equal(denied.statusCode, 403);
      assert.deepEqual(told, [], 'refused requests are not told');
      const ok = await server.app.inject({
        method: 'GET',
        url: '/api/v1/namespaces/a/configmaps',
        headers: { authorization: 'Bearer good' },
      });
      assert.equal(ok.statusCode, 200);
      assert.deepEqual(told, ['list configmaps a not-cached']);
      // Admitted by the proxy but refused by the apiserver (the client's own RBAC): told nothing,
      // so it starts no cache under the proxy's identity (attack pass 2, finding 1).
      const upstreamDenied = await server.app.inject({
        method: 'GET',
        url: '/api/v1/namespaces/a/secrets',
        headers: { authorization: 'Bearer good' },
      });
      assert.equal(upstreamDenied.statusCode, 403);
      assert.deepEqual(told, ['list configmaps a not-cached']);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

describe('issue 15 F1: which passed-through watches the on-demand handover ends', () => {
  it('a not-cached WATCH with bookmarks gets a handover that ends it after the event in flight, and is forwarded without Accept-Encoding; without bookmarks, none', async () => {
    const e1 = '{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a"}}}\n';
    const e2 = '{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"b"}}}\n';
    let writeRest!: () => void;
    const encodings: (string | undefined)[] = [];
    const upstream = createServer((req, res) => {
      encodings.push(req.headers['accept-encoding']);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(e1 + e2.slice(0, 20));
      writeRest = () => res.write(`${e2.slice(20)}${e1}`);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const agent = new Agent();
    const tracked: { resource: string; handover: (() => void) | undefined; untracked: boolean }[] = [];
    const { logger, lines: warned } = logLines<{ msg: string }>('warn');
    const server = buildServer({
      upstream: {
        server: new URL(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`),
        dispatcher: agent,
        longRunningDispatcher: agent,
        authorization: async () => undefined,
      },
      caches: [],
      codec: fakeCodec,
      consistentReads: 'cache',
      logger,
      hooks: [
        onDemandRequestHook({
          request: () => {},
          trackWatch: (info, handover) => {
            const t = { resource: info.resource, handover, untracked: false };
            tracked.push(t);
            return () => {
              t.untracked = true;
            };
          },
        }),
      ],
    });
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`;
    const open = (query: string) =>
      new Promise<{ first: Promise<void>; body: Promise<string>; destroy: () => void }>((resolve, reject) => {
        const req = request(
          `${base}/api/v1/namespaces/a/configmaps?${query}`,
          { headers: { 'accept-encoding': 'gzip' } },
          (res) => {
            let b = '';
            let gotFirst!: () => void;
            const first = new Promise<void>((r) => {
              gotFirst = r;
            });
            const body = new Promise<string>((r) => {
              res.on('data', (c: Buffer) => {
                b += c.toString();
                if (b.length >= e1.length + 20) gotFirst();
              });
              res.on('end', () => r(b));
              res.on('close', () => r(b));
            });
            resolve({ first, body, destroy: () => req.destroy() });
          },
        );
        req.on('error', reject);
        req.end();
      });
    try {
      const kubectl = await open('watch=1&resourceVersion=5');
      await kubectl.first;
      assert.equal(tracked.length, 1);
      assert.equal(tracked[0]!.resource, 'configmaps');
      assert.equal(tracked[0]!.handover, undefined, 'kubectl get -w: never handed over');
      kubectl.destroy();
      await kubectl.body;

      const informer = await open('watch=1&resourceVersion=5&allowWatchBookmarks=true&timeoutSeconds=300');
      await informer.first;
      assert.equal(tracked.length, 2);
      const handover = tracked[1]!.handover;
      assert.ok(handover, 'a reflector watch gets a handover');
      handover();
      writeRest();
      // Ended right after the event that was in flight; the next one is not sent.
      assert.equal(await informer.body, e1 + e2);
      await until('the second answer untracked', () => Boolean(tracked[1]!.untracked));
      assert.equal(tracked[1]!.untracked, true, 'unregistered once ended');
      assert.equal(tracked[0]!.untracked, true);
      // client-go accepts gzip and the apiserver gzips watch answers: a watch the handover may
      // end is asked for uncompressed (its event boundaries must be seen); the others unchanged.
      assert.deepEqual(encodings, ['gzip', undefined]);

      // Shutdown does not wait for an event in flight (it stays immediate, unlike a handover).
      const third = await open('watch=1&allowWatchBookmarks=true');
      await third.first;
      await server.shutdown();
      assert.equal(await third.body, e1 + e2.slice(0, 20), 'cut where it was');
      // A handover would have cut it only after its bounded wait, with this warning.
      assert.deepEqual(
        warned.map((l) => l.msg),
        [],
        'cut by the shutdown, not by a handover that timed out',
      );
    } finally {
      await server.shutdown();
      upstream.closeAllConnections();
      await new Promise((r) => upstream.close(r));
      await agent.close();
    }
  });
});

describe('issue 29: metric series are not created by any caller', () => {
  it('10,000 random resource paths without a credential, with a bad token (401) or a good one (passed upstream, 404) add no series', async (t) => {
    const metrics = createMetrics({ processMetrics: false });
    const { agent, server } = mockServer([pod('a', 'p1', 7)], { access: access(), metrics });
    agent
      .get('https://apiserver.test:6443')
      .intercept({ path: () => true, method: () => true })
      .reply(404, '{"kind":"Status","code":404}')
      .persist();
    const rand = prng(29);
    // Thirds: no credential (passed upstream as anonymous), a bad token (refused 401), a good one.
    const credentials = [{}, { authorization: 'Bearer bad' }, { authorization: 'Bearer good' }];
    let k = 0;
    const send = async (n: number) => {
      for (let i = 0; i < n; i += 100)
        await Promise.all(
          Array.from({ length: 100 }, () =>
            server.app.inject({
              url: randomResourcePath(rand),
              headers: credentials[k++ % 3]!,
            }),
          ),
        );
    };
    const counted = async () =>
      (await metrics.requests.get()).values.reduce((n, v) => n + v.value, 0) +
      (await metrics.refusedRequests.get()).values.reduce((n, v) => n + v.value, 0);
    const seriesAfter = async (total: number) => {
      await until(`${total} requests counted`, async () => (await counted()) >= total);
      assert.equal(await counted(), total);
      return (await metrics.scrape()).split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    };
    try {
      // The fixed values (<other>, the refused codes) exist after the first requests.
      await send(100);
      const before = await seriesAfter(100);
      await send(10_000);
      const after = await seriesAfter(10_100);
      t.diagnostic(`series: before ${before}, after ${after}`);
      assert.equal(after, before, `series before ${before}, after ${after}`);
      const refused = 3367; // k % 3 === 1 for k < 10,100
      assert.equal(
        metricSum(await metrics.scrape(), 'kube_cache_proxy_requests_refused_total', { code: '401' }),
        refused,
      );
      assert.equal(
        metricSum(await metrics.scrape(), 'kube_cache_proxy_requests_total', {
          resource: '<other>',
          code: '404',
        }),
        10_100 - refused,
      );
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});
