/**
 * `npm start` (scripts/start.ts), the README's main command: starts its own fixture apiserver and
 * the proxy in front of it, prints a kubeconfig that kubectl uses through the proxy, and on
 * Ctrl-C (SIGINT) stops both, removes their data and exits 0. A bad proxy flag exits 2 at once.
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

test('npm start: prints a kubeconfig kubectl uses through the proxy; SIGINT cleans up, exit 0', async () => {
  const f = await sharedFixture(); // only for its kubectl binary
  const r = run(['--listen', '127.0.0.1:0', '--ops-listen', '127.0.0.1:0', '--resources', 'auto,configmaps']);
  try {
    const deadline = Date.now() + 120_000;
    while (!/export KUBECONFIG=\S+/.test(r.out())) {
      assert.ok(Date.now() < deadline, `no kubeconfig printed: ${r.out()}\n${r.err()}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const kubeconfig = /export KUBECONFIG=(\S+)/.exec(r.out())![1]!;
    assert.match(r.out(), /kube-cache-proxy is listening at http:\/\/127\.0\.0\.1:\d+ /);
    // Attack finding: under auto the line was empty ("caching: ").
    assert.match(
      r.out(),
      /caching: auto \(on demand: each resource a client lists or watches\), configmaps\n/,
    );
    const created = await f.kubectl(['create', 'configmap', 'via-start', '--from-literal=a=1'], {
      kubeconfig,
    });
    assert.equal(created.stdout, 'configmap/via-start created\n', created.stderr);
    const got = await f.kubectl(['get', 'configmap', 'via-start', '-o', 'jsonpath={.data.a}'], {
      kubeconfig,
    });
    assert.equal(got.stdout, '1', got.stderr);
    r.child.kill('SIGINT');
    assert.equal(await r.exit, 0);
    assert.equal(existsSync(dirname(kubeconfig)), false, 'fixture data removed');
  } finally {
    r.child.kill('SIGKILL');
  }
});
