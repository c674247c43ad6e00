/**
 * Watches through the whole proxy (issue 4): a client-go reflector recovers when the proxy
 * closes its watch (proxy restarted on the same port while objects change); without parking
 * (`--max-parked-watchers=0`; parked watchers: parked-watcher.test.ts) a watcher that never
 * reads is closed without costing the others a single event; `kubectl get -w` and
 * `kubectl logs` through the proxy behave like direct kubectl.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { type Agent, request } from 'undici';
import type { Fixture } from '../fixture/index.ts';
import { adminRequest, openAdminSession } from '../support/admin-session.ts';
import { eventually } from '../support/eventually.ts';
import { startProbe } from '../support/informer-probe.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';
import { openPausedWatch } from '../support/raw-watch.ts';

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

async function until(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('watches through the proxy', () => {
  let f: Fixture;
  let agent: Agent;
  let auth: Record<string, string>;
  before(async () => ({ f, agent, auth } = await openAdminSession()));
  after(() => agent.close());

  const direct = (method: string, path: string, body?: unknown) =>
    adminRequest<{ metadata: { resourceVersion: string }; items?: unknown[] }>(
      { f, agent, auth },
      method,
      path,
      body,
    );

  test('a client-go informer recovers after the proxy closes its watch, and ends equal to the apiserver', async () => {
    const ns = await f.newNamespace('recover');
    const cms = `/api/v1/namespaces/${ns}/configmaps`;
    await direct('POST', cms, { metadata: { name: 'before' } });
    let p: InProcessProxy = await startProxy(f, { resources: 'configmaps' });
    const listen = p.url.replace('http://', '');
    const kubeconfig = p.kubeconfig;
    let stopped = false;
    try {
      const probe = startProbe(f.bin.probe, {
        kubeconfig,
        resource: 'configmaps',
        namespace: ns,
        untilStopped: true,
      });
      await probe.synced;
      const sawEvent = (type: string, name: string) =>
        eventually(`the informer saw ${type} ${name}`, 120_000, async () =>
          probe.events().some((e) => e.type === type && e.key === `${ns}/${name}`) ? true : undefined,
        );
      await direct('POST', cms, { metadata: { name: 'live-1' } });
      await sawEvent('ADDED', 'live-1');
      // The proxy goes away: its watches end; writes continue while it is down.
      await p.stop();
      stopped = true;
      await direct('POST', cms, { metadata: { name: 'while-down' } });
      await direct('DELETE', `${cms}/before`);
      // Back on the same address, with a fresh cache (window starting after the probe's RV).
      p = await startProxy(f, { resources: 'configmaps', listen });
      stopped = false;
      await direct('POST', cms, { metadata: { name: 'after' } });
      // It relists or resumes through the new proxy at client-go's backoff: stop it once it has
      // the last write, not after a fixed 12 s (too short on a loaded machine).
      await sawEvent('ADDED', 'after');
      probe.stop();
      const r = await probe.done;
      const list = (await direct('GET', cms)) as unknown as {
        items: { metadata: { name: string; resourceVersion: string } }[];
      };
      assert.deepEqual(
        r.store,
        list.items.map((o) => ({ key: `${ns}/${o.metadata.name}`, rv: o.metadata.resourceVersion })),
      );
      assert.deepEqual(
        r.store.map((s) => s.key),
        [`${ns}/after`, `${ns}/live-1`, `${ns}/while-down`],
      );
      const seen = new Set(r.events.map((e) => `${e.type} ${e.key}`));
      for (const e of ['ADDED live-1', 'ADDED while-down', 'DELETED before', 'ADDED after']) {
        const [type, name] = e.split(' ');
        assert.ok(seen.has(`${type} ${ns}/${name}`), `${e} in ${[...seen].join(', ')}`);
      }
    } finally {
      if (!stopped) await p.stop();
    }
  });

  test('without parking, a watcher that never reads is closed; the others get every event of a 2,000-event burst; RSS stays bounded', async () => {
    const ns = await f.newNamespace('stall');
    const cms = `/api/v1/namespaces/${ns}/configmaps`;
    const p = await startProxy(f, { resources: 'configmaps', args: ['--max-parked-watchers=0'] });
    try {
      const rv = (await direct('GET', cms)).metadata.resourceVersion;
      const watchPath = `${cms}?watch=1&resourceVersion=${rv}&timeoutSeconds=120`;
      // The stalled client: sends its request and never reads a byte.
      const stalled = openPausedWatch(p.url, watchPath, auth);
      let stalledClosed = false;
      stalled.on('close', () => {
        stalledClosed = true;
      });

      // Three readers count every event.
      const N = 1000;
      const readers = [0, 1, 2].map(async () => {
        const r = await request(`${p.url}${watchPath}`, { headers: auth });
        assert.equal(r.statusCode, 200);
        const seen = { ADDED: 0, DELETED: 0, other: 0, lastRV: 0n, outOfOrder: 0 };
        let buf = '';
        for await (const c of r.body) {
          buf += c.toString();
          let i = buf.indexOf('\n');
          while (i >= 0) {
            const ev = JSON.parse(buf.slice(0, i)) as {
              type: string;
              object: { metadata: { resourceVersion: string } };
            };
            buf = buf.slice(i + 1);
            i = buf.indexOf('\n');
            if (ev.type === 'ADDED' || ev.type === 'DELETED') seen[ev.type]++;
            else seen.other++;
            const erv = BigInt(ev.object.metadata.resourceVersion);
            if (erv <= seen.lastRV) seen.outOfOrder++;
            seen.lastRV = erv;
          }
          if (seen.DELETED === N) break;
        }
        r.body.destroy();
        return seen;
      });
      await until('4 watchers on the proxy', () => p.parts.statusSource.resources()[0]?.watchers === 4);
      const rss0 = process.memoryUsage().rss;

      // The burst: 1,000 creates of 10 KiB objects, then one deletecollection (1,000 DELETED).
      const data = { blob: 'x'.repeat(10 * 1024) };
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < N) {
            const i = next++;
            await direct('POST', cms, { metadata: { name: `b-${i}` }, data });
          }
        }),
      );
      await direct('DELETE', cms);
      const results = await Promise.all(readers);
      for (const s of results) {
        assert.deepEqual(s, { ADDED: N, DELETED: N, other: 0, lastRV: s.lastRV, outOfOrder: 0 });
      }
      // The stalled watcher was closed by the proxy (its buffer overflowed): only the readers'
      // watchers were registered, and they are gone too now.
      await until('no watchers left on the proxy', () => p.parts.statusSource.resources()[0]?.watchers === 0);
      const rssGrowth = process.memoryUsage().rss - rss0;
      // 20 MiB of events went to each of 3 readers; the stalled one holds at most its queue.
      assert.ok(rssGrowth < 256 * 1024 * 1024, `RSS grew by ${rssGrowth} bytes`);
      // The connection is closed from the proxy's side (cut, or the watch ended once a drain let
      // its backlog out, then closed): once the client reads what the kernel buffered, it gets
      // EOF, long before the 120 s timeoutSeconds.
      let got = 0;
      const eof = new Promise<void>((res) => stalled.once('end', () => res()));
      stalled.on('data', (c: Buffer) => {
        got += c.length;
      });
      stalled.resume();
      await Promise.race([
        eof,
        sleep(10_000).then(() => assert.fail('stalled connection not closed by the proxy')),
      ]);
      assert.ok(got > 0 && got < 2 * N * 10 * 1024, `stalled client got ${got} bytes: cut short`);
      await until('stalled socket closed', () => stalledClosed, 5_000);
    } finally {
      await p.stop();
    }
  });

  test('kubectl get -w through the proxy sees a create; kubectl logs answers like direct', async () => {
    const ns = await f.newNamespace('kwatch');
    const p = await startProxy(f, { resources: 'configmaps,pods' });
    try {
      const child = spawn(
        f.bin.kubectl,
        ['--kubeconfig', p.kubeconfig, 'get', 'configmaps', '-w', '-n', ns, '-o', 'name'],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: 60_000,
        },
      );
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      // kube-root-ca.crt is not published (no controller-manager): the namespace starts empty.
      await until('kubectl watch registered', () =>
        p.parts.statusSource.resources().some((s) => s.watchers === 1),
      );
      await direct('POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'watched' } });
      await until('kubectl printed the create', () => out.includes('configmap/watched\n'));
      child.kill('SIGTERM');
      assert.equal(out, 'configmap/watched\n');

      // No kubelet in the fixture: a pod is never scheduled; whatever kubectl logs says about it
      // (and about a missing pod or container), it must say the same through the proxy.
      // No controller-manager either: the ServiceAccount admission needs "default" made by hand.
      await direct('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'default' } });
      await direct('POST', `/api/v1/namespaces/${ns}/pods`, {
        metadata: { name: 'p' },
        spec: { automountServiceAccountToken: false, containers: [{ name: 'c', image: 'busybox' }] },
      });
      for (const args of [
        ['logs', '-n', ns, 'p'],
        ['logs', '-n', ns, 'missing'],
        ['logs', '-n', ns, 'p', '-c', 'nope'],
      ]) {
        const viaProxy = await f.kubectl(args, { kubeconfig: p.kubeconfig });
        const d = await f.kubectl(args, { kubeconfig: f.kubeconfigs.adminToken });
        if (args.includes('missing')) assert.match(d.stderr, /pods "missing" not found/);
        assert.deepEqual(
          { code: viaProxy.code, stdout: viaProxy.stdout, stderr: viaProxy.stderr },
          { code: d.code, stdout: d.stdout, stderr: d.stderr },
          args.join(' '),
        );
      }
    } finally {
      await p.stop();
    }
  });
});
