/**
 * `npm start` (scripts/start.ts), the README's main command: starts its own fixture apiserver and
 * the proxy in front of it in the mode for people (TLS on loopback, `--delegated-auth`), prints a
 * kubeconfig per identity (admin, namespace-limited) that kubectl uses through the proxy as that
 * identity, and on Ctrl-C (SIGINT) stops both, removes their data and exits 0. A bad proxy flag
 * exits 2 at once.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sharedFixture } from '../fixture/index.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const start = join(root, 'scripts', 'start.ts');

function run(args: string[]) {
  const child = spawn(process.execPath, [start, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exit = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
  return { child, out: () => stdout, err: () => stderr, exit };
}

test('a bad proxy flag: one line on stderr, exit code 2, no apiserver started', async () => {
  const r = run(['--resources', 'configmaps', '--max-watchers', 'many']);
  assert.equal(await r.exit, 2);
  assert.equal(r.out(), '');
  assert.match(r.err(), /^npm start: --max-watchers: .*\n$/);
});

test('npm start: a kubeconfig per identity, each itself through the proxy; SIGINT cleans up, exit 0', async () => {
  const f = await sharedFixture(); // only for its kubectl binary
  const r = run(['--listen', '127.0.0.1:0', '--ops-listen', '127.0.0.1:0', '--resources', 'auto,configmaps']);
  try {
    const deadline = Date.now() + 120_000;
    while (!/Ctrl-C stops both/.test(r.out())) {
      assert.ok(Date.now() < deadline, `no kubeconfig printed: ${r.out()}\n${r.err()}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const admin = /admin \(cluster-admin\): +(\S+)/.exec(r.out())![1]!;
    const limited = /limited \(anything in namespace limited only\): (\S+)/.exec(r.out())![1]!;
    assert.match(
      r.out(),
      /kube-cache-proxy is listening at https:\/\/127\.0\.0\.1:\d+ \(TLS, --delegated-auth/,
    );
    assert.match(r.out(), new RegExp(`export KUBECONFIG=${admin}\n`));
    // Attack finding: under auto the line was empty ("caching: ").
    assert.match(
      r.out(),
      /caching: auto \(on demand: each resource a client lists or watches\), configmaps\n/,
    );
    const whoami = async (kubeconfig: string) =>
      (await f.kubectl(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], { kubeconfig }))
        .stdout;
    assert.equal(await whoami(admin), 'system:serviceaccount:kcp-system:admin');
    assert.equal(await whoami(limited), 'system:serviceaccount:kcp-system:limited');
    const created = await f.kubectl(['create', 'configmap', 'via-start', '--from-literal=a=1'], {
      kubeconfig: admin,
    });
    assert.equal(created.stdout, 'configmap/via-start created\n', created.stderr);
    const got = await f.kubectl(['get', 'configmap', 'via-start', '-o', 'jsonpath={.data.a}'], {
      kubeconfig: admin,
    });
    assert.equal(got.stdout, '1', got.stderr);
    // User trial: the printed hint said "table output is rendered upstream", but kubectl get's
    // Table of configmaps is printed by the cache (as the README says): the hint says so, and a
    // Table LIST is counted served from the cache.
    assert.match(
      r.out(),
      /kubectl get configmaps -A -o yaml .*; without -o, the table is printed by the cache too\n/,
    );
    assert.doesNotMatch(r.out(), /rendered upstream/);
    const ops = /\(ops: (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(r.out())![1]!;
    const cachedLists = async () => {
      const text = await (await fetch(`${ops}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) =>
          l.startsWith(
            'kube_cache_proxy_requests_total{verb="LIST",group="",version="v1",resource="configmaps",subresource="",served_from="cache",code="200",reason=""}',
          ),
        );
      return line === undefined ? 0 : Number(line.split(' ').pop());
    };
    // Until the configured configmaps cache has synced a Table LIST may pass upstream; then each
    // one (kubectl get's only request) is counted from the cache.
    for (;;) {
      assert.ok(Date.now() < deadline, 'no kubectl get Table served from the cache');
      const before = await cachedLists();
      const table = await f.kubectl(['get', 'configmaps', '-A'], { kubeconfig: admin });
      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stdout, /^NAMESPACE +NAME +DATA +AGE\n/);
      if ((await cachedLists()) === before + 1) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    // The README's quick start: the limited user is refused where the apiserver refuses it.
    const other = await f.kubectl(['get', 'configmaps', '-n', 'kube-system'], { kubeconfig: limited });
    assert.equal(other.code, 1);
    assert.equal(
      other.stderr,
      'Error from server (Forbidden): configmaps is forbidden: User "system:serviceaccount:kcp-system:limited" cannot list resource "configmaps" in API group "" in the namespace "kube-system"\n',
    );
    const own = await f.kubectl(['get', 'configmaps', '-o', 'name'], { kubeconfig: limited });
    assert.equal(own.code, 0, own.stderr);
    r.child.kill('SIGINT');
    assert.equal(await r.exit, 0);
    assert.equal(existsSync(dirname(admin)), false, 'fixture data removed');
  } finally {
    r.child.kill('SIGKILL');
  }
});
