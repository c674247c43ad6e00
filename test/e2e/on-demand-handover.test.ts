/**
 * Issue 15, bug F1 (attack pass): the on-demand handover ended `kubectl get -w`. With
 * `--resources=auto`, watches passed upstream while a cache starts are ended once it is synced,
 * so that client-go reflectors re-watch into the cache; `kubectl get -w` watches once and exited.
 * Now only watches that send `allowWatchBookmarks=true` (what client-go reflectors send, never
 * kubectl get -w) are ended, and at an event boundary. Against the fixture apiserver, the proxy
 * run as `npm start` runs it (src/cli.ts):
 * - `kubectl get -w` as the FIRST request of an uncached resource keeps running after the cache
 *   synced and prints an object created later directly at the apiserver, as a `kubectl get -w`
 *   straight at the apiserver does;
 * - a bookmark-enabled passed-through JSON watch (the watch-list an informer sends first, with
 *   Go's `Accept-Encoding: gzip`, which the apiserver answers gzipped) is still ended cleanly
 *   while events flow on it, is relayed uncompressed, its body is whole JSON lines, and the
 *   informer's next watch (served from the cache) has every object: nothing lost or cut.
 * The resources (persistentvolumeclaims, ingresses) are watched by no other e2e file, so the
 * apiserver's watch counts are this file's.
 *
 * Issue 15, bug G (attack pass): the handover came right after the watch-list's
 * initial-events-end BOOKMARK (the cache synced meanwhile), less than 1 s after it and without
 * another event: client-go's reflector took it for a "very short watch" (`reflector.go`
 * `handleAnyWatch`: `watchDuration < 1s && eventCount == 0`), logged `Failed to watch … very
 * short watch`, backed off and listed everything again (a second watch-list, its Replace
 * reported every object as MODIFIED) instead of resuming from the bookmark's RV. The last test:
 * an informer-probe (JSON, watch-list on) as the first client of podtemplates (uncached, no
 * other test here uses them) is handed over without that: no warning, no MODIFIED event, its
 * re-watch from the cache resumes (`resourceVersion=<bookmark's>`, no `sendInitialEvents`), no
 * LIST. And the BOOKMARK detection (`EventBoundary`, first bytes only) on the apiserver's own
 * watch-list answers, JSON and protobuf.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { EventBoundary, watchFraming } from '../../src/apimachinery/watch-framing.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { startProbe } from '../support/informer-probe.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

interface DebugEntry {
  resource: string;
  origin: string;
  synced: boolean;
  watchers: number;
}

interface WatchLine {
  type: string;
  object: { kind: string; metadata: { name: string; resourceVersion: string } };
}

/** A spawned `kubectl get -w`, its stdout collected. */
function kubectlWatch(bin: string, kubeconfig: string, args: string[]) {
  const child: ChildProcess = spawn(bin, ['--kubeconfig', kubeconfig, 'get', ...args, '-w', '-o', 'name']);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  return {
    child,
    out: () => out,
    err: () => err,
    running: () => child.exitCode === null && child.signalCode === null,
  };
}

const claim = (name: string) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
});

const ingress = (name: string) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name },
  spec: { defaultBackend: { service: { name: 'backend', port: { number: 80 } } } },
});

describe('issue 15 F1: the on-demand handover keeps kubectl get -w, hands informers over cleanly', () => {
  let f: Fixture;
  let proxy: CliProxy;
  let ns: string;
  let agent: Agent;
  const children: ChildProcess[] = [];
  const get = async (base: string, path: string) => {
    const r = await request(`${base}${path}`, {
      dispatcher: agent,
      headers: { accept: 'application/json', authorization: `Bearer ${f.tokens.admin}` },
    });
    return { status: r.statusCode, body: await r.body.text() };
  };
  const entry = async (resource: string) =>
    (JSON.parse((await get(proxy.ops, '/debug/cache')).body) as { resources: DebugEntry[] }).resources.find(
      (e) => e.resource === resource,
    );
  /** WATCH requests the apiserver is serving for `resource` (the proxy's reflector included). */
  const apiserverWatches = async (resource: string) =>
    metricSum((await get(f.server, '/metrics')).body, 'apiserver_longrunning_requests', {
      resource,
      verb: 'WATCH',
    });
  const requestsTotal = async (labels: Record<string, string>) =>
    metricSum((await get(proxy.ops, '/metrics')).body, 'kube_cache_proxy_requests_total', labels);
  const apply = async (obj: object) => {
    const c = await f.kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(obj) });
    assert.equal(c.code, 0, c.stderr);
  };

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('handover');
    await apply(claim('c1'));
    proxy = await startProxy(f, { run: 'cli', resources: 'auto', args: ['--log-level', 'info'] });
  });
  after(async () => {
    for (const c of children) c.kill();
    await proxy?.stop();
    await agent?.close();
  });

  test('regression: kubectl get -w as the first request of an uncached resource still runs after the cache synced and prints a later object', async () => {
    const args = ['persistentvolumeclaims', '-n', ns];
    assert.equal(await entry('persistentvolumeclaims'), undefined, 'not cached before');
    // The apiserver's own informers may watch them already (admission): counted from here.
    const base = await apiserverWatches('persistentvolumeclaims');
    const viaProxy = kubectlWatch(f.bin.kubectl, proxy.kubeconfig, args);
    children.push(viaProxy.child);
    await eventually('kubectl lists c1', 20_000, async () =>
      viaProxy.out().includes('persistentvolumeclaim/c1') ? true : undefined,
    );
    // Its LIST started the cache; its WATCH went upstream before the cache synced: the apiserver
    // serves two more watches, the proxy's reflector's and kubectl's.
    const e = await eventually('cache synced', 30_000, async () => {
      const x = await entry('persistentvolumeclaims');
      return x?.synced ? x : undefined;
    });
    assert.equal(e.origin, 'auto');
    await eventually('two upstream watches', 10_000, async () => {
      if (!viaProxy.running()) throw new Error(`kubectl exited (code ${viaProxy.child.exitCode})`);
      return (await apiserverWatches('persistentvolumeclaims')) === base + 2 ? true : undefined;
    });
    // Before the fix the handover ended kubectl's watch at the sync and kubectl exited (code 0).
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(viaProxy.running(), true, `kubectl exited: ${viaProxy.err()}`);
    assert.equal(
      await apiserverWatches('persistentvolumeclaims'),
      base + 2,
      'kubectl still watches upstream',
    );

    const direct = kubectlWatch(f.bin.kubectl, f.kubeconfigs.adminToken, args);
    children.push(direct.child);
    await eventually('direct kubectl lists c1', 20_000, async () =>
      direct.out().includes('persistentvolumeclaim/c1') ? true : undefined,
    );
    await apply(claim('c2'));
    await eventually('both print c2', 20_000, async () =>
      viaProxy.out().includes('persistentvolumeclaim/c2') && direct.out().includes('persistentvolumeclaim/c2')
        ? true
        : undefined,
    );
    assert.equal(viaProxy.out(), 'persistentvolumeclaim/c1\npersistentvolumeclaim/c2\n');
    assert.equal(viaProxy.out(), direct.out());
    assert.equal(viaProxy.running(), true);
    assert.equal(viaProxy.err(), '');
    // The LIST went upstream (it started the cache); no WATCH was served from the cache.
    assert.equal(
      await requestsTotal({ verb: 'LIST', resource: 'persistentvolumeclaims', served_from: 'upstream' }),
      1,
    );
    assert.equal(
      await requestsTotal({ verb: 'WATCH', resource: 'persistentvolumeclaims', served_from: 'cache' }),
      0,
    );
    assert.equal((await entry('persistentvolumeclaims'))?.watchers, 0);
  });

  test("a bookmark-enabled passed-through watch (an informer's watch-list) is ended cleanly on an event boundary, uncompressed; its re-watch from the cache misses nothing", async (t) => {
    const path = `/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`;
    // What client-go's reflector sends first (watch-list; test/e2e/controller-runtime.test.ts's
    // manager sends the same), with Go's transport's Accept-Encoding.
    const watchList = `${path}?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=300`;
    const created: string[] = [];
    const create = async (name: string) => {
      const r = await request(`${f.server}${path}`, {
        dispatcher: agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${f.tokens.admin}` },
        body: JSON.stringify(ingress(name)),
      });
      assert.equal(r.statusCode, 201, await r.body.text());
      created.push(name);
    };
    // Objects that exist before the watch (its initial events) and created while it is open:
    // events flow on it when the handover comes.
    for (let i = 0; i < 100; i++) await create(`i${i}`);
    // Directly, the apiserver answers that watch gzipped.
    const ac0 = new AbortController();
    const d = await request(`${f.server}${watchList}`, {
      dispatcher: agent,
      headers: {
        accept: 'application/json',
        'accept-encoding': 'gzip',
        authorization: `Bearer ${f.tokens.admin}`,
      },
      signal: ac0.signal,
    });
    assert.equal(d.statusCode, 200);
    assert.equal(d.headers['content-encoding'], 'gzip', 'the apiserver gzips this watch');
    ac0.abort();
    await d.body.text().catch(() => {});

    const started = Date.now();
    const w = await request(`${proxy.url}${watchList}`, {
      headers: { accept: 'application/json', 'accept-encoding': 'gzip', ...proxy.auth },
      bodyTimeout: 0,
    });
    assert.equal(w.statusCode, 200);
    assert.equal(w.headers['content-type'], 'application/json');
    assert.equal(w.headers['content-encoding'], undefined, 'asked upstream uncompressed');
    let ended = false;
    const writer = (async () => {
      for (let i = 100; !ended && i < 1000; i++) await create(`i${i}`);
    })();
    const body = await w.body.text();
    ended = true;
    await writer;
    assert.ok(Date.now() - started < 30_000, 'ended within the sync time');
    assert.equal((await entry('ingresses'))?.synced, true);
    assert.equal(
      await requestsTotal({
        verb: 'WATCH',
        resource: 'ingresses',
        served_from: 'upstream',
        reason: 'not-cached',
      }),
      1,
    );
    // Whole JSON lines only: the body ends on a newline and every line parses.
    assert.notEqual(body, '', 'the initial events flowed on the passed-through watch');
    assert.equal(body.at(-1), '\n', `cut inside an event: ${body.slice(-80)}`);
    const lines = body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as WatchLine);
    for (const l of lines) assert.ok(['ADDED', 'BOOKMARK'].includes(l.type), l.type);
    const seen = lines.filter((l) => l.type === 'ADDED').map((l) => l.object.metadata.name);
    assert.equal(new Set(seen).size, seen.length, 'no object twice');
    for (const n of seen) assert.ok(created.includes(n), n);
    t.diagnostic(`${seen.length} of ${created.length} objects seen on the passed-through watch`);

    // The informer watches again (a watch-list, since this one ended): served from the cache,
    // every object is there, one created after the handover too.
    await create('after');
    const ac = new AbortController();
    const w2 = await request(`${proxy.url}${watchList}`, {
      headers: { accept: 'application/json', ...proxy.auth },
      bodyTimeout: 0,
      signal: ac.signal,
    });
    assert.equal(w2.statusCode, 200);
    let text = '';
    const got = new Set<string>();
    try {
      for await (const chunk of w2.body) {
        text += String(chunk);
        const nl = text.lastIndexOf('\n');
        for (const l of text
          .slice(0, nl + 1)
          .split('\n')
          .filter(Boolean)) {
          const ev = JSON.parse(l) as WatchLine;
          if (ev.type === 'ADDED') got.add(ev.object.metadata.name);
        }
        text = text.slice(nl + 1);
        if (got.size >= created.length) break;
      }
    } finally {
      ac.abort();
    }
    assert.deepEqual([...got].sort(), [...created].sort());
    // Counted once the proxy saw the watch close (after the abort, not at it).
    await eventually('the cache watch counted', 5_000, async () =>
      (await requestsTotal({ verb: 'WATCH', resource: 'ingresses', served_from: 'cache' })) >= 1
        ? true
        : undefined,
    );
    assert.equal(await requestsTotal({ verb: 'WATCH', resource: 'ingresses', served_from: 'cache' }), 1);
  });
});

describe('issue 15 G: the handover right after a watch-list\'s initial events is no "very short watch" for client-go', () => {
  let f: Fixture;
  let proxy: CliProxy;
  let agent: Agent;
  let ns: string;

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('shortwatch');
    // Debug: the proxy logs each request's URL once it ended.
    proxy = await startProxy(f, { run: 'cli', resources: 'auto', args: ['--log-level', 'debug'] });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
  });

  const direct = async (method: string, path: string, body?: object) => {
    const r = await request(`${f.server}${path}`, {
      dispatcher: agent,
      method,
      headers: {
        accept: 'application/json',
        'content-type': 'application/json',
        authorization: `Bearer ${f.tokens.admin}`,
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await r.body.text();
    assert.ok(r.statusCode < 300, text);
    return JSON.parse(text) as { items: { metadata: { name: string; resourceVersion: string } }[] };
  };
  const requestsTotal = async (labels: Record<string, string>) => {
    const r = await request(`${proxy.ops}/metrics`);
    return metricSum(await r.body.text(), 'kube_cache_proxy_requests_total', labels);
  };
  const template = (name: string) => ({
    apiVersion: 'v1',
    kind: 'PodTemplate',
    metadata: { name },
    template: { spec: { containers: [{ name: 'c', image: 'example.invalid/c' }] } },
  });

  test('regression: an informer-probe (JSON, watch-list) as the first client of podtemplates resumes into the cache: no very short watch, no relist', async (t) => {
    const path = `/api/v1/namespaces/${ns}/podtemplates`;
    for (const n of ['t1', 't2', 't3']) await direct('POST', path, template(n));
    const probe = startProbe(f.bin.probe, {
      kubeconfig: proxy.kubeconfig,
      resource: 'podtemplates',
      namespace: ns,
      watchList: true,
      untilStopped: true,
    });
    await probe.synced;
    // The passed-through watch-list is ended once the cache synced (counted once it ended); the
    // informer re-watches into the cache (before the fix: after a ~1 s backoff, a whole new
    // watch-list).
    await eventually('the handover', 15_000, async () =>
      (await requestsTotal({ verb: 'WATCH', resource: 'podtemplates', served_from: 'upstream' })) >= 1
        ? true
        : undefined,
    );
    await new Promise((res) => setTimeout(res, 1_500)); // the re-watch (or the relist) is open
    await direct('POST', path, template('after'));
    await eventually('the informer saw the later object', 60_000, async () =>
      probe.events().some((e) => e.key === `${ns}/after`) ? true : undefined,
    );
    probe.stop();
    const r = await probe.done;
    const list = await direct('GET', path);
    const logged = () =>
      proxy
        .logs()
        .filter((l) => l.msg === 'request' && String(l.url).includes('/podtemplates'))
        .map((l) => ({ url: String(l.url), from: String(l.served_from), ms: l.ms }));
    t.diagnostic(`probe stderr: ${probe.stderr()}`);
    t.diagnostic(`probe events: ${JSON.stringify(r.events)}`);
    t.diagnostic(`requests: ${JSON.stringify(logged())}`);

    assert.doesNotMatch(probe.stderr(), /very short watch/);
    assert.doesNotMatch(probe.stderr(), /Failed to watch/);
    // Only the initial ADDED events and the later object's: a relist's Replace reports every
    // object it already had as MODIFIED.
    const events = r.events.map((e) => `${e.type} ${e.key}`);
    assert.deepEqual(
      [...events.slice(0, 3).sort(), ...events.slice(3)],
      ['t1', 't2', 't3', 'after'].map((n) => `ADDED ${ns}/${n}`),
    );
    assert.deepEqual(
      r.store,
      list.items.map((o) => ({ key: `${ns}/${o.metadata.name}`, rv: o.metadata.resourceVersion })),
    );
    // Requests for podtemplates: the watch-list passed upstream (not cached), then one watch
    // from the cache that resumes at an RV (no sendInitialEvents: not a relist); no LIST.
    assert.equal(
      await requestsTotal({
        verb: 'WATCH',
        resource: 'podtemplates',
        served_from: 'upstream',
        reason: 'not-cached',
      }),
      1,
    );
    assert.equal(await requestsTotal({ verb: 'WATCH', resource: 'podtemplates', served_from: 'cache' }), 1);
    assert.equal(await requestsTotal({ verb: 'LIST', resource: 'podtemplates' }), 0);
    const urls = await eventually('both watches logged (they ended with the probe)', 10_000, async () => {
      const u = logged();
      return u.length >= 2 ? u : undefined;
    });
    assert.equal(urls.length, 2, JSON.stringify(urls));
    assert.match(urls.find((u) => u.from === 'upstream')?.url ?? '', /sendInitialEvents=true/);
    const rewatch = new URL(urls.find((u) => u.from === 'cache')?.url ?? '', 'http://x');
    assert.equal(rewatch.searchParams.get('watch'), 'true');
    assert.equal(rewatch.searchParams.get('sendInitialEvents'), null, `a relist: ${rewatch}`);
    assert.match(rewatch.searchParams.get('resourceVersion') ?? '', /^[0-9]+$/);
  });

  test("the apiserver's own watch-list bytes, JSON and protobuf: EventBoundary finds each event and tells the initial-events-end BOOKMARK", async () => {
    const ns2 = await f.newNamespace('framing');
    const path = `/api/v1/namespaces/${ns2}/podtemplates`;
    for (const n of ['p1', 'p2']) await direct('POST', path, template(n));
    const watchList = `${path}?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=30`;
    for (const accept of ['application/json', 'application/vnd.kubernetes.protobuf']) {
      const ac = new AbortController();
      const r = await request(`${f.server}${watchList}`, {
        dispatcher: agent,
        headers: { accept, authorization: `Bearer ${f.tokens.admin}` },
        signal: ac.signal,
        bodyTimeout: 0,
      });
      assert.equal(r.statusCode, 200);
      const framing = watchFraming(String(r.headers['content-type']), undefined);
      assert.ok(framing, String(r.headers['content-type']));
      const b = new EventBoundary(framing);
      const kinds: string[] = [];
      const raw: Buffer[] = [];
      try {
        for await (const chunk of r.body) {
          raw.push(chunk as Buffer);
          let off = 0;
          for (;;) {
            const n = b.next((chunk as Buffer).subarray(off));
            if (n < 0) break;
            off += n;
            kinds.push(b.lastWasBookmark ? 'BOOKMARK' : 'other');
          }
          if (kinds.includes('BOOKMARK')) break;
        }
      } finally {
        ac.abort();
      }
      // Two ADDED, then the bookmark ending the initial events (nothing else is written meanwhile).
      assert.deepEqual(
        kinds,
        ['other', 'other', 'BOOKMARK'],
        `${accept}: ${Buffer.concat(raw).toString('latin1')}`,
      );
      assert.equal(b.atBoundary, true);
      if (framing === 'json-lines') {
        const lines = Buffer.concat(raw).toString().split('\n').filter(Boolean);
        assert.deepEqual(
          lines.map((l) => (JSON.parse(l) as { type: string }).type),
          ['ADDED', 'ADDED', 'BOOKMARK'],
        );
      }
    }
  });
});
