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
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
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

/** Sum of the samples of `name` whose labels include every `labels` pair. */
function metricSum(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf('}');
    const lbl = line.slice(name.length + 1, close);
    if (Object.entries(labels).every(([k, v]) => lbl.includes(`${k}="${v}"`)))
      sum += Number(line.slice(close + 1).trim());
  }
  return sum;
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
    assert.equal(await requestsTotal({ verb: 'WATCH', resource: 'ingresses', served_from: 'cache' }), 1);
  });
});
