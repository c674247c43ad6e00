/**
 * Warm restarts the upstream cannot simply resume (docs/operations.md "Snapshots", and
 * docs/design.md §3 "Snapshots and warm restart"), against a private fixture apiserver compacting
 * etcd every 5 s (`--etcd-compaction-interval`), side by side with the apiserver:
 *
 * - **Compacted past the snapshot**: a configmap deleted while the proxy was down, then etcd
 *   compacted until the apiserver itself answers a watch from the snapshot's RV with 410. The
 *   restarted proxy's resumed watch gets that 410 and relists (reason `expired`); a client
 *   resuming from the snapshot's RV gets 410 from the proxy as from the apiserver; client-go
 *   informers through the proxy — one started at once, while the snapshot is served, one after
 *   the relist — end with the apiserver's store, the deleted object not in it.
 * - **Started with the apiserver down**: the proxy serves its snapshot as not live (RV="0" reads
 *   to its own identity, informers of both kinds sync from it; `/readyz` names the resource and
 *   the snapshot's age); consistent reads and other identities go upstream (503). With
 *   `--delegated-auth` nothing is served: no token was ever reviewed, so none is admitted, the
 *   outage grace included (401), and a certificate's SubjectAccessReview cannot be answered
 *   (upstream, where a certificate is not carried without --impersonate-certificate-clients: 403). Once the apiserver is back the proxy is live, equal to it, and a watch-list
 *   client gets the same objects and its initial-events-end bookmark as from the apiserver.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { decodeSnapshot } from '../../src/snapshot/snapshot-format.ts';
import { type Fixture, startFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { get as plainGet } from '../support/http-get.ts';
import { startProbe } from '../support/informer-probe.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

interface WatchLine {
  type: string;
  object: {
    metadata: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
    code?: number;
    reason?: string;
  };
}

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

describe('warm restarts the upstream cannot resume: compaction, a start during an outage', () => {
  let f: Fixture;
  let agent: Agent;
  let certAgent: Agent;
  const admin = () => ({ authorization: `Bearer ${f.tokens.admin}` });

  before(async () => {
    // podtemplates without the apiserver's watch cache: a watch is etcd's, 410 once compacted.
    f = await startFixture({
      apiserverFlags: ['--etcd-compaction-interval=5s', '--watch-cache-sizes=podtemplates#0'],
      readyTimeoutMs: 300_000,
    });
    agent = new Agent({ connect: { ca: f.caPem } });
    certAgent = new Agent({
      connect: {
        ca: f.caPem,
        cert: await readFile(f.adminCert.cert),
        key: await readFile(f.adminCert.key),
      },
    });
  });
  after(async () => {
    await agent?.close();
    await certAgent?.close();
    await f?.stop();
  });

  const kubectl = async (args: string[]) => {
    const r = await f.kubectl(args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  };
  const names = (body: string) =>
    (JSON.parse(body) as { items: { metadata: { name: string; resourceVersion: string } }[] }).items
      .map((i) => `${i.metadata.name}@${i.metadata.resourceVersion}`)
      .sort();
  /** A LIST of `ns`'s configmaps from `base` (`?query`), with `headers`, through `dispatcher`. */
  const list = async (
    base: string,
    ns: string,
    query: string,
    headers: Record<string, string>,
    dispatcher?: Agent,
    resource = 'configmaps',
  ) => {
    const r = await request(`${base}/api/v1/namespaces/${ns}/${resource}?${query}`, {
      headers: { accept: 'application/json', ...headers },
      ...(dispatcher ? { dispatcher } : {}),
    });
    const body = await r.body.text();
    return { status: r.statusCode, body, fromCache: r.headers['audit-id'] === undefined };
  };
  const direct = async (ns: string, resource = 'configmaps') =>
    names((await list(f.server, ns, '', admin(), agent, resource)).body);
  /**
   * A whole watch answer (ended by `timeoutSeconds`) from `base`; an answer other than 200 as one
   * ERROR line of its Status.
   */
  const watch = async (
    base: string,
    ns: string,
    query: string,
    dispatcher?: Agent,
    resource = 'configmaps',
  ): Promise<WatchLine[]> => {
    const r = await request(`${base}/api/v1/namespaces/${ns}/${resource}?watch=1&timeoutSeconds=2&${query}`, {
      headers: admin(),
      ...(dispatcher ? { dispatcher } : {}),
    });
    const text = await r.body.text();
    if (r.statusCode !== 200) return [{ type: 'ERROR', object: JSON.parse(text) as WatchLine['object'] }];
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as WatchLine);
  };
  /** The snapshot's resourceVersion in `dir`. */
  const snapshotRV = async (dir: string, resource = 'configmaps') =>
    decodeSnapshot(await readFile(join(dir, `${resource}.snap`))).header.resourceVersion;
  const flags = (ns: string, dir: string, extra: string[] = [], resources = 'configmaps') => ({
    resources,
    args: ['--namespace', ns, '--snapshot-dir', dir, '--snapshot-interval', '1h', ...extra],
  });
  /** A watch-list's events: ADDED `name@rv` sorted, then the initial-events-end bookmark's presence. */
  const watchList = (lines: WatchLine[]) => {
    const end = lines.findIndex(
      (l) => l.type === 'BOOKMARK' && l.object.metadata.annotations?.[INITIAL_EVENTS_END] === 'true',
    );
    assert.ok(end >= 0, `no initial-events-end bookmark: ${JSON.stringify(lines)}`);
    const initial = lines.slice(0, end);
    assert.ok(
      initial.every((l) => l.type === 'ADDED'),
      JSON.stringify(initial),
    );
    return initial.map((l) => `${l.object.metadata.name}@${l.object.metadata.resourceVersion}`).sort();
  };

  test('compacted past the snapshot (podtemplates, served from etcd): 410 and a relist, as the apiserver answers; informers end equal to it, the deleted object gone', async () => {
    const ns = await f.newNamespace('compacted');
    const R = 'podtemplates';
    const template = (name: string) => ({
      apiVersion: 'v1',
      kind: 'PodTemplate',
      metadata: { name },
      template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    });
    const apply = async (items: unknown[]) => {
      const r = await f.kubectl(['apply', '-n', ns, '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
      });
      assert.equal(r.code, 0, r.stderr);
    };
    await apply([template('kept'), template('gone')]);
    const dir = join(await mkdtemp(join(f.dir, 'snapshots-')), 's');
    const first = await startProxy(f, flags(ns, dir, [], R));
    await first.stop();
    const rv = await snapshotRV(dir, R);
    await kubectl(['delete', 'podtemplate', 'gone', '-n', ns]);
    await kubectl(['label', 'podtemplate', 'kept', '-n', ns, 'changed=yes']);
    await apply([template('new')]);
    // The apiserver itself no longer resumes from the snapshot's RV (etcd compacted past it).
    const directExpired = await eventually(
      'the apiserver answers 410 from the snapshot RV',
      120_000,
      async () => {
        const lines = await watch(f.server, ns, `resourceVersion=${rv}`, agent, R);
        return lines[0]?.type === 'ERROR' ? lines[0] : undefined;
      },
    );
    assert.equal(directExpired.object.code, 410);
    assert.equal(directExpired.object.reason, 'Expired');

    const p = await startProxy(f, flags(ns, dir, [], R));
    const early = startProbe(f.bin.probe, {
      kubeconfig: p.kubeconfig,
      resource: R,
      namespace: ns,
      untilStopped: true,
    });
    try {
      const state = () => p.parts.statusSource.resources()[0]!;
      await eventually('relisted and live', 60_000, async () => (state().live ? true : undefined));
      assert.deepEqual(state().relists, { expired: 1 });
      const want = await direct(ns, R);
      assert.ok(!want.some((n) => n.startsWith('gone@')));
      assert.deepEqual(names((await list(p.url, ns, 'resourceVersion=0', p.auth, undefined, R)).body), want);
      // A client resuming from the snapshot's RV: 410 from the proxy as from the apiserver.
      const viaProxy = await watch(p.url, ns, `resourceVersion=${rv}`, undefined, R);
      assert.equal(viaProxy[0]?.type, 'ERROR', JSON.stringify(viaProxy));
      assert.equal(viaProxy[0]!.object.code, 410);
      assert.equal(viaProxy[0]!.object.reason, 'Expired');

      const late = startProbe(f.bin.probe, {
        kubeconfig: p.kubeconfig,
        resource: R,
        namespace: ns,
        untilStopped: true,
        watchList: true,
      });
      await Promise.all([early.synced, late.synced]);
      const storeOf = (e: ReturnType<typeof early.events>) => {
        const m = new Map<string, string>();
        for (const x of e) {
          if (x.type === 'DELETED') m.delete(x.key);
          else m.set(x.key, x.rv);
        }
        return [...m].map(([k, v]) => `${k.split('/')[1]}@${v}`).sort();
      };
      for (const [name, probe] of [
        ['informer started while the snapshot was served', early],
        ['watch-list informer started after the relist', late],
      ] as const) {
        await eventually(`${name}: equal to the apiserver`, 60_000, async () =>
          JSON.stringify(storeOf(probe.events())) === JSON.stringify(want) ? true : undefined,
        );
        probe.stop();
        const r = await probe.done;
        assert.deepEqual(r.store.map((i) => `${i.key.split('/')[1]}@${i.rv}`).sort(), want, name);
      }
    } finally {
      early.stop();
      await p.stop();
    }
  });

  test('started with the apiserver down: the snapshot served as not live to the proxy identity, named on /readyz; nothing to delegated clients; equal to the apiserver once it is back', async () => {
    const ns = await f.newNamespace('down');
    for (const name of ['a', 'b'])
      await kubectl(['create', 'configmap', name, '-n', ns, '--from-literal=k=v']);
    const root = await mkdtemp(join(f.dir, 'snapshots-'));
    const dir = join(root, 's');
    const first = await startProxy(f, flags(ns, dir));
    const before = await direct(ns);
    await first.stop();
    // The same file for a delegated-auth proxy (its own 0700 directory).
    const delegatedDir = join(root, 'd');
    await mkdir(delegatedDir, { mode: 0o700 });
    await copyFile(join(dir, 'configmaps.snap'), join(delegatedDir, 'configmaps.snap'));

    process.kill(f.pids().apiserver, 'SIGKILL');
    await eventually('the apiserver is down', 30_000, async () =>
      (await list(f.server, ns, '', admin(), agent).catch((e: Error) => e)) instanceof Error
        ? true
        : undefined,
    );
    let simple: InProcessProxy | undefined;
    let delegated: InProcessProxy | undefined;
    try {
      simple = await startProxy(f, flags(ns, dir));
      delegated = await startProxy(f, {
        ...flags(ns, delegatedDir, ['--authorization-outage-grace=10m']),
        delegatedAuth: true,
      });
      const s = simple;
      const state = () => s.parts.statusSource.resources()[0]!;
      assert.equal(state().live, false);
      assert.notEqual(state().restoredFromMs, null);
      // RV="0": the snapshot, from the cache, to the proxy's own identity.
      const any = await list(s.url, ns, 'resourceVersion=0', s.auth);
      assert.equal(any.status, 200, any.body);
      assert.equal(any.fromCache, true);
      assert.deepEqual(names(any.body), before);
      // RV="" (consistent) is the upstream's: down.
      const consistent = await list(s.url, ns, '', s.auth);
      assert.equal(consistent.status, 503, consistent.body);
      assert.equal((JSON.parse(consistent.body) as { reason: string }).reason, 'ServiceUnavailable');
      // Another identity cannot be reviewed: upstream with its token, down.
      const reader = await list(s.url, ns, 'resourceVersion=0', {
        authorization: `Bearer ${f.tokens.reader}`,
      });
      assert.equal(reader.status, 503, reader.body);
      // /readyz: ready from the snapshot, named with its age; the upstream check fails.
      const ready = await plainGet(`${s.ops}/readyz?verbose&exclude=upstream`);
      assert.equal(ready.status, 200, ready.body);
      assert.match(
        ready.body,
        /\[\+\]cache-sync\/configmaps ok \(served from a snapshot taken \d+s ago, not live\)/,
      );
      const full = await plainGet(`${s.ops}/readyz?verbose`);
      assert.equal(full.status, 503, full.body);
      assert.match(full.body, /\[-\]upstream failed/);
      // What a client-go informer asks (the probe cannot run: its discovery goes upstream). A
      // watch-list (RV="": consistent) is the upstream's, down: 503, and client-go falls back to
      // LIST RV="0" and a watch from its RV, which the snapshot answers.
      const q = 'sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true';
      const wlDown = await watch(s.url, ns, q);
      assert.equal(wlDown[0]?.type, 'ERROR');
      assert.equal(wlDown[0]!.object.code, 503, JSON.stringify(wlDown));
      const listRV = (JSON.parse(any.body) as { metadata: { resourceVersion: string } }).metadata
        .resourceVersion;
      assert.equal(listRV, await snapshotRV(dir));
      const resumed = await watch(s.url, ns, `resourceVersion=${listRV}&allowWatchBookmarks=true`);
      assert.ok(
        resumed.every((l) => l.type === 'BOOKMARK'),
        JSON.stringify(resumed),
      );
      // --delegated-auth: no token was ever reviewed, the grace has nothing to reuse.
      const d = delegated;
      const token = await list(d.url, ns, 'resourceVersion=0', admin(), agent);
      assert.equal(token.status, 401, token.body);
      // A client certificate is verified locally, but its SubjectAccessReview gets no answer:
      // the read goes upstream, where the node-local mode (no --impersonate-certificate-clients)
      // cannot carry a certificate.
      const cert = await list(d.url, ns, 'resourceVersion=0', {}, certAgent);
      assert.equal(cert.status, 403, cert.body);
      assert.match(cert.body, /a client certificate cannot be forwarded to the apiserver/);

      await f.restartApiserver();
      // The resume check is retried after the reflector's backoff (up to 30 s); with no write to
      // the namespace, the resumed watch is proven by its first bookmark (the apiserver's watch
      // cache sends one about a minute in).
      await eventually('live again', 180_000, async () => (state().live ? true : undefined));
      const want = await direct(ns);
      assert.deepEqual(want, before);
      assert.deepEqual(names((await list(s.url, ns, 'resourceVersion=0', s.auth)).body), want);
      assert.deepEqual(names((await list(s.url, ns, '', s.auth)).body), want);
      // A watch-list client: the apiserver's objects and its initial-events-end bookmark.
      assert.deepEqual(watchList(await watch(s.url, ns, q)), watchList(await watch(f.server, ns, q, agent)));
      await eventually('the delegated proxy reviews again', 30_000, async () =>
        (await list(d.url, ns, 'resourceVersion=0', admin(), agent)).status === 200 ? true : undefined,
      );
    } finally {
      await simple?.stop();
      await delegated?.stop();
    }
  });
});
