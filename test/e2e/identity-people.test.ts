/**
 * The mode for people (docs/design.md §4): the proxy on loopback with TLS and `--delegated-auth`,
 * and a kubeconfig per person with the CA and the person's own token. kubectl as three identities
 * of the fixture (cluster-admin, namespace-limited, a namespace reader) prints through the proxy
 * exactly what it prints direct, for get, list, watch, exec (a fixed harmless `echo` on the pods
 * fixture: KWOK runs exec commands on this machine), `--as`, `auth whoami` and `auth can-i`,
 * allowed and refused alike. Over `http://` none of this held: kubectl sent no credential, so
 * every command ran as the proxy (`proxy-start.test.ts` covers `npm start`'s kubeconfigs).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { writeKubeconfig } from '../fixture/index.ts';
import { type PodsFixture, startPodsFixture } from '../fixture/pods-fixture.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

interface Run {
  stdout: string;
  stderr: string;
  code: number;
}

type Who = 'admin' | 'limited' | 'reader';
const WHO: readonly Who[] = ['admin', 'limited', 'reader'];

/** klog's line prefix (`E1206 08:51:06.243359   30741 `): time and pid differ between two runs. */
const klog = (s: string) => s.replace(/^([IWE])\d{4} [\d:.]+ +\d+ /gm, '$1 ');

describe('people: kubectl as three identities through the proxy (TLS, --delegated-auth) = direct', {
  timeout: 600_000,
}, () => {
  let f: PodsFixture;
  let proxy: InProcessProxy;
  /** Per identity: kubeconfig and discovery cache dir, direct (d) and through the proxy (p). */
  const kc = {} as Record<Who, { d: string; p: string; cacheD: string; cacheP: string }>;
  let other = '';
  const ns = 'limited';

  const kubectl = (who: Who, side: 'd' | 'p', args: string[]) =>
    new Promise<Run>((resolve) => {
      const k = kc[who];
      execFile(
        f.bin.kubectl,
        ['--kubeconfig', k[side], '--cache-dir', side === 'd' ? k.cacheD : k.cacheP, ...args],
        { timeout: 90_000, cwd: f.dir },
        (err, stdout, stderr) =>
          resolve({
            stdout,
            stderr: klog(stderr),
            code: err ? (typeof err.code === 'number' ? err.code : 1) : 0,
          }),
      );
    });
  /** The same command direct and through the proxy, as `who`: same stdout, stderr and exit code. */
  const same = async (who: Who, args: string[]) => {
    const d = await kubectl(who, 'd', args);
    const p = await kubectl(who, 'p', args);
    const what = `kubectl ${args.join(' ')} as ${who}`;
    assert.equal(p.stderr, d.stderr, `stderr of ${what}`);
    assert.equal(p.stdout, d.stdout, `stdout of ${what}`);
    assert.equal(p.code, d.code, `exit code of ${what}`);
    return d;
  };

  before(async () => {
    f = await startPodsFixture({ verbose: false });
    proxy = await startProxy(f, { resources: 'configmaps,pods', delegatedAuth: true });
    assert.match(proxy.url, /^https:\/\/127\.0\.0\.1:/);
    for (const who of WHO) {
      const token = f.tokens[who];
      kc[who] = {
        d: await writeKubeconfig(join(f.dir, `${who}.direct.kubeconfig`), {
          server: f.server,
          caFile: f.caFile,
          user: { token },
        }),
        p: await writeKubeconfig(join(f.dir, `${who}.people.kubeconfig`), {
          server: proxy.url,
          caFile: f.caFile,
          user: { token },
        }),
        cacheD: await mkdtemp(join(tmpdir(), 'kcp-people-d-')),
        cacheP: await mkdtemp(join(tmpdir(), 'kcp-people-p-')),
      };
    }
    // A running pod in `limited` (every identity may read it; admin and limited may exec) and
    // one in another namespace (admin only); a ConfigMap in each.
    other = await f.newNamespace('people');
    // The controller-manager creates `default` in the fixture's `limited` namespace too.
    const sa = await f.kubectl(['wait', '--for=create', 'serviceaccount/default', '-n', ns, '--timeout=60s']);
    assert.equal(sa.code, 0, sa.stderr);
    for (const n of [ns, other]) {
      const run = await f.kubectl(['run', 'p', '-n', n, '--image=busybox', '--labels=app=p']);
      assert.equal(run.code, 0, run.stderr);
      const cm = await f.kubectl(['create', 'configmap', 'c', '-n', n, '--from-literal=a=1']);
      assert.equal(cm.code, 0, cm.stderr);
    }
    for (const n of [ns, other]) {
      const ready = await f.kubectl(['wait', '-n', n, '--for=condition=Ready', 'pod/p', '--timeout=90s']);
      assert.equal(ready.code, 0, ready.stderr);
    }
  });
  after(async () => {
    await proxy?.stop();
    await f?.stop();
  });

  test('auth whoami: each identity is itself through the proxy', async () => {
    for (const who of WHO) {
      // The table (JSON carries the review's creationTimestamp, a second apart between two runs).
      const d = await same(who, ['auth', 'whoami']);
      assert.match(d.stdout, new RegExp(`^Username +system:serviceaccount:kcp-system:${who}\n`, 'm'));
    }
  });

  test('get and list: allowed where the apiserver allows, refused with its words elsewhere', async () => {
    for (const who of WHO) {
      await same(who, ['get', 'pod', 'p', '-n', ns, '-o', 'name']);
      await same(who, ['get', 'configmaps', '-n', ns, '-o', 'name']);
      await same(who, ['get', 'configmap', 'c', '-n', ns, '-o', 'jsonpath={.data.a}']);
      const elsewhere = await same(who, ['get', 'configmaps', '-n', other, '-o', 'name']);
      assert.equal(elsewhere.code, who === 'admin' ? 0 : 1, elsewhere.stderr);
      await same(who, ['get', 'configmap', 'c', '-n', other, '-o', 'name']);
      await same(who, ['get', 'configmaps', '-A', '-o', 'name']);
      await same(who, ['get', 'secrets', '-n', ns, '-o', 'name']);
    }
    // The equality above is not the apiserver answering everything: reads came from the cache.
    const text = await (await fetch(`${proxy.ops}/metrics`)).text();
    assert.ok(
      metricSum(text, 'kube_cache_proxy_requests_total', { served_from: 'cache' }) > 0,
      'served from the cache',
    );
    assert.ok(metricSum(text, 'kube_cache_proxy_authorization_decisions_total', { decision: 'denied' }) > 0);
    const refused = await kubectl('limited', 'p', ['get', 'configmaps', '-n', other]);
    assert.equal(
      refused.stderr,
      `Error from server (Forbidden): configmaps is forbidden: User "system:serviceaccount:kcp-system:limited" cannot list resource "configmaps" in API group "" in the namespace "${other}"\n`,
    );
  });

  test('watch: the same events, or the same refusal', async () => {
    /** Starts `kubectl get configmaps -w` as `who`; resolves its output once `line` appeared or it exited. */
    const watch = (who: Who, side: 'd' | 'p', namespace: string) => {
      const k = kc[who];
      const child: ChildProcess = spawn(f.bin.kubectl, [
        '--kubeconfig',
        k[side],
        '--cache-dir',
        side === 'd' ? k.cacheD : k.cacheP,
        'get',
        'configmaps',
        '-n',
        namespace,
        '-o',
        'name',
        '--watch',
      ]);
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (c: Buffer) => {
        stdout += c.toString();
      });
      child.stderr!.on('data', (c: Buffer) => {
        stderr += c.toString();
      });
      const exited = new Promise<number>((r) => child.once('close', (code) => r(code ?? -1)));
      return {
        /**
         * Waits until stdout holds `line` or the process ended (bounded by the test timeout);
         * with `stop`, then ends the watch and resolves with all it printed.
         */
        async until(line: string, stop = false): Promise<Run> {
          while (!stdout.includes(line) && child.exitCode === null && child.signalCode === null)
            await new Promise((r) => setTimeout(r, 20));
          if (!stop) return { stdout, stderr, code: -1 };
          if (child.exitCode === null) child.kill();
          const code = await exited;
          return { stdout, stderr: klog(stderr), code: child.signalCode ? 0 : code };
        },
      };
    };
    for (const who of WHO) {
      for (const namespace of [ns, other]) {
        const allowed = who === 'admin' || namespace === ns;
        const w = { d: watch(who, 'd', namespace), p: watch(who, 'p', namespace) };
        const name = `w-${who}-${namespace}`;
        if (allowed) {
          // kubectl lists first (printing `configmap/c`), then watches from that list's RV: a
          // ConfigMap created once both printed the list is seen by both watches.
          await w.d.until('configmap/c\n');
          await w.p.until('configmap/c\n');
          const c = await f.kubectl(['create', 'configmap', name, '-n', namespace]);
          assert.equal(c.code, 0, c.stderr);
        }
        const d = await w.d.until(`configmap/${name}\n`, true);
        const p = await w.p.until(`configmap/${name}\n`, true);
        assert.equal(p.stdout, d.stdout, `watch as ${who} in ${namespace}`);
        assert.equal(p.stderr, d.stderr, `watch stderr as ${who} in ${namespace}`);
        if (allowed)
          assert.match(
            d.stdout,
            new RegExp(`^configmap/c\n(.*\n)*configmap/${name}\n$`),
            `${d.code} ${d.stderr}`,
          );
        else {
          assert.equal(d.code, 1);
          assert.equal(p.code, 1);
          assert.match(d.stderr, /cannot list resource "configmaps"|cannot watch resource "configmaps"/);
        }
      }
    }
  });

  test('exec: a fixed harmless echo runs as each identity, or is refused as direct', async () => {
    for (const who of WHO) {
      const here = await same(who, ['exec', '-n', ns, 'p', '--', 'echo', 'hello']);
      assert.equal(here.code, who === 'reader' ? 1 : 0, here.stderr);
      if (who !== 'reader') assert.equal(here.stdout, 'hello\n');
      else assert.match(here.stderr, /cannot create resource "pods\/exec"/);
      const there = await same(who, ['exec', '-n', other, 'p', '--', 'echo', 'hello']);
      assert.equal(there.code, who === 'admin' ? 0 : 1, there.stderr);
    }
  });

  test("--as: impersonation by the person's own rights (admin may, the others may not)", async () => {
    for (const who of WHO) {
      const r = await same(who, [
        'get',
        'configmaps',
        '-n',
        ns,
        '-o',
        'name',
        '--as=system:serviceaccount:kcp-system:reader',
      ]);
      assert.equal(r.code, who === 'admin' ? 0 : 1, r.stderr);
      const w = await same(who, [
        'auth',
        'whoami',
        '-o',
        'jsonpath={.status.userInfo.username}',
        '--as=someone',
      ]);
      if (who === 'admin') assert.equal(w.stdout, 'someone');
    }
  });

  test('auth can-i: the same answers', async () => {
    for (const who of WHO) {
      for (const args of [
        ['list', 'configmaps', '-n', ns],
        ['list', 'configmaps', '-n', other],
        ['create', 'pods/exec', '-n', ns],
        ['get', 'secrets', '-n', 'kube-system'],
        ['impersonate', 'serviceaccounts'],
      ])
        await same(who, ['auth', 'can-i', ...args]);
      await same(who, ['auth', 'can-i', '--list', '-n', ns]);
    }
  });
});
