/**
 * Snapshot files a proxy must not serve (docs/design.md §3 "Snapshots and warm restart", Safety),
 * against the real fixture apiserver with the proxy binary (`src/cli.ts`, its log lines read): a
 * proxy takes a snapshot of one namespace's configmaps, one of them is then deleted at the
 * apiserver (`stale`) and another created (`fresh`), and a proxy starts on the same directory
 * with the file damaged or belonging elsewhere — truncated, corrupt (checksum), another format
 * version, another server URL, another `--namespace`, another cluster at the same URL (the
 * `kube-system` UID). Each logs one warning, lists the resource from the apiserver, and never
 * answers a read with the snapshot's objects: from its first answer on, every RV="0" LIST equals
 * the apiserver's store, never holding `stale`. The intact file is the control: restored (no
 * warning, no LIST), the delete then arriving on the resumed watch.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { decodeSnapshot, encodeSnapshot } from '../../src/snapshot/snapshot-format.ts';
import { type Fixture, sharedFixture, writeKubeconfig } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { get as plainGet } from '../support/http-get.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

/** pino's level of a warning. */
const WARN = 40;

describe('snapshot files that must not be served: one warning, a relist, nothing from the file', () => {
  let f: Fixture;
  let agent: Agent;
  let dir: string;
  let ns: string;
  let other: string;
  let good: Buffer;
  const file = () => join(dir, 'configmaps.snap');

  const kubectl = async (args: string[]) => {
    const r = await f.kubectl(args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  };
  /** `name@rv` of a LIST body's items, sorted. */
  const names = (body: string) =>
    (JSON.parse(body) as { items: { metadata: { name: string; resourceVersion: string } }[] }).items
      .map((i) => `${i.metadata.name}@${i.metadata.resourceVersion}`)
      .sort();
  const direct = async (namespace: string) => {
    const r = await request(`${f.server}/api/v1/namespaces/${namespace}/configmaps`, {
      dispatcher: agent,
      headers: { authorization: `Bearer ${f.tokens.admin}` },
    });
    return names(await r.body.text());
  };
  const start = (namespace: string, kubeconfig?: string) =>
    startProxy(f, {
      run: 'cli',
      resources: 'configmaps',
      ...(kubeconfig ? { kubeconfig } : {}),
      args: ['--namespace', namespace, '--snapshot-dir', dir, '--snapshot-interval', '1h'],
    });

  const metrics = async (p: CliProxy) => (await plainGet(`${p.ops}/metrics`)).body;
  /**
   * RV="0" LISTs through `p` from its first answer until its cache is live (its upstream watch
   * accepted: `kube_cache_proxy_reflector_upstream_live`) and ready, then the answers (200s only:
   * before its cache is synced the proxy may answer otherwise).
   */
  const readsUntilLive = async (p: CliProxy, namespace: string): Promise<string[][]> => {
    const seen: string[][] = [];
    const deadline = Date.now() + 60_000;
    for (;;) {
      const r = await request(`${p.url}/api/v1/namespaces/${namespace}/configmaps?resourceVersion=0`, {
        headers: p.auth,
      }).catch(() => undefined);
      if (r?.statusCode === 200) seen.push(names(await r.body.text()));
      else await r?.body.dump();
      const ready = await plainGet(`${p.ops}/readyz/cache-sync/configmaps`).catch(() => undefined);
      const live = await metrics(p).catch(() => '');
      if (
        ready?.status === 200 &&
        metricSum(live, 'kube_cache_proxy_reflector_upstream_live', { resource: 'configmaps' }) === 1
      )
        break;
      assert.ok(Date.now() < deadline, `not live in 60 s: ${p.stdout()}`);
    }
    return seen;
  };
  /** The proxy's warnings about snapshots. */
  const snapshotWarnings = (p: CliProxy) =>
    p
      .logs()
      .filter((l) => (l.level as number) >= WARN && /snapshot/.test(String(l.msg)))
      .map((l) => String(l.msg));

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('snapfault');
    other = await f.newNamespace('snapfault-other');
    dir = join(await mkdtemp(join(f.dir, 'snapshots-')), 's');
    for (const name of ['kept', 'stale'])
      await kubectl(['create', 'configmap', name, '-n', ns, '--from-literal=k=v']);
    await kubectl(['create', 'configmap', 'there', '-n', other, '--from-literal=k=v']);
    const first = await start(ns);
    await readsUntilLive(first, ns);
    assert.equal(await first.stop(), 0);
    good = await readFile(file());
    assert.equal(decodeSnapshot(good).header.objects, 2);
    await kubectl(['delete', 'configmap', 'stale', '-n', ns]);
    await kubectl(['create', 'configmap', 'fresh', '-n', ns, '--from-literal=k=v']);
  });
  after(async () => {
    await agent?.close();
  });

  /** The snapshot with its header changed and its checksum recomputed (a well-formed file). */
  const rewritten = (change: (h: ReturnType<typeof decodeSnapshot>['header']) => void): Buffer => {
    const d = decodeSnapshot(good);
    change(d.header);
    return Buffer.concat([...encodeSnapshot(d)]);
  };

  const cases: {
    what: string;
    bytes: () => Buffer;
    namespace?: () => string;
    kubeconfig?: () => Promise<string>;
    load: string;
    relist: string;
    warning: RegExp;
  }[] = [
    {
      what: 'truncated to less than a header',
      bytes: () => good.subarray(0, 20),
      load: 'truncated',
      relist: 'initial',
      warning: /unreadable/,
    },
    {
      // The checksum is the file's last 32 bytes: a file cut short fails it (counted corrupt).
      what: 'truncated to half',
      bytes: () => good.subarray(0, Math.floor(good.length / 2)),
      load: 'corrupt',
      relist: 'initial',
      warning: /unreadable/,
    },
    {
      what: 'corrupt (one byte changed)',
      bytes: () => {
        const b = Buffer.from(good);
        const i = Math.floor(b.length / 2);
        b[i] = b[i]! ^ 0x20;
        return b;
      },
      load: 'corrupt',
      relist: 'initial',
      warning: /unreadable/,
    },
    {
      what: 'of another format version',
      bytes: () => {
        const b = Buffer.from(good);
        b.writeUInt32BE(99, 8);
        return b;
      },
      load: 'version',
      relist: 'initial',
      warning: /unreadable/,
    },
    {
      what: 'of another server URL (the same apiserver as https://localhost)',
      bytes: () => good,
      kubeconfig: () =>
        writeKubeconfig(join(dir, '..', 'localhost.kubeconfig'), {
          server: f.server.replace('127.0.0.1', 'localhost'),
          caFile: f.caFile,
          user: { token: f.tokens.admin },
        }),
      load: 'foreign',
      relist: 'initial',
      warning: /another apiserver or scope/,
    },
    {
      what: 'of another namespace (--namespace changed)',
      bytes: () => good,
      namespace: () => other,
      load: 'foreign',
      relist: 'initial',
      warning: /another apiserver or scope/,
    },
    {
      what: 'of another cluster at the same URL (kube-system UID)',
      bytes: () =>
        rewritten((h) => {
          h.identity.kubeSystemUID = '00000000-0000-0000-0000-000000000000';
        }),
      // Refused when loaded: the UID is asked before anything is served (requests are held
      // while snapshots load; answered from the file when it was compared at resume only).
      load: 'foreign',
      relist: 'initial',
      warning: /another apiserver or scope/,
    },
  ];

  for (const c of cases) {
    test(`a snapshot ${c.what}: one warning, relisted, never served`, async () => {
      await writeFile(file(), c.bytes(), { mode: 0o600 });
      await chmod(file(), 0o600);
      const namespace = c.namespace?.() ?? ns;
      const p = await start(namespace, await c.kubeconfig?.());
      try {
        const seen = await readsUntilLive(p, namespace);
        const want = await direct(namespace);
        assert.ok(seen.length > 0, 'answered at least once');
        for (const s of seen)
          assert.deepEqual(s, want, 'an RV="0" LIST: the apiserver store, nothing of the file');
        const m = await metrics(p);
        assert.equal(
          metricSum(m, 'kube_cache_proxy_snapshot_loads_total', { resource: 'configmaps', result: c.load }),
          1,
        );
        assert.equal(
          metricSum(m, 'kube_cache_proxy_reflector_relists_total', {
            resource: 'configmaps',
            reason: c.relist,
          }),
          1,
          m,
        );
        // That one LIST, nothing more (a warm start counts no `initial`).
        assert.equal(
          metricSum(m, 'kube_cache_proxy_reflector_relists_total', { resource: 'configmaps' }),
          1,
          m,
        );
        const warnings = snapshotWarnings(p);
        assert.equal(warnings.length, 1, warnings.join('\n'));
        assert.match(warnings[0]!, c.warning);
      } finally {
        assert.equal(await p.stop(), 0);
      }
      // The new proxy's own snapshot replaced the file (a well-formed one, of its namespace).
      const h = decodeSnapshot(await readFile(file())).header;
      assert.equal(h.resource.namespace, namespace);
    });
  }

  test('control: the intact file is restored (no warning, no LIST) and the delete arrives on the resumed watch', async () => {
    await writeFile(file(), good, { mode: 0o600 });
    const p = await start(ns);
    try {
      await readsUntilLive(p, ns);
      await eventually('the delete arrived', 30_000, async () => {
        const r = await request(`${p.url}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`, {
          headers: p.auth,
        });
        const got = names(await r.body.text());
        return JSON.stringify(got) === JSON.stringify(await direct(ns)) ? true : undefined;
      });
      const m = await metrics(p);
      assert.equal(
        metricSum(m, 'kube_cache_proxy_snapshot_loads_total', { resource: 'configmaps', result: 'restored' }),
        1,
      );
      assert.equal(
        metricSum(m, 'kube_cache_proxy_reflector_relists_total', { resource: 'configmaps' }),
        0,
        m,
      );
      assert.deepEqual(snapshotWarnings(p), []);
    } finally {
      assert.equal(await p.stop(), 0);
    }
  });
});
