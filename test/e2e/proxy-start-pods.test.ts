/**
 * `npm start -- --pods` (scripts/start.ts with the pods fixture, test/fixture/pods-fixture.ts):
 * the README's exec, logs and cp commands work through the printed kubeconfig, and the
 * instructions say plainly that KWOK's exec runs commands on this machine, and where.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { POD_LOG_LINES } from '../fixture/pods-fixture.ts';
import { eventually } from '../support/eventually.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('npm start -- --pods: exec, logs and cp through the proxy; the warning names this machine and the folder', {
  timeout: 600_000,
}, async () => {
  const child = spawn(
    process.execPath,
    [join(root, 'scripts', 'start.ts'), '--pods', '--listen', '127.0.0.1:0', '--ops-listen', '127.0.0.1:0'],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exit = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
  try {
    // Building the pods binaries on a cold machine takes minutes; here they are built by CI first.
    await eventually('the instructions printed', 300_000, async () => {
      if (child.exitCode !== null)
        throw new Error(`npm start exited ${child.exitCode}: ${stdout}\n${stderr}`);
      return /^Ctrl-C stops both/m.test(stdout) ? true : undefined;
    });
    const kubeconfig = /export KUBECONFIG=(\S+)/.exec(stdout)![1]!;
    const kubectlBin = /alias kubectl=(\S+)/.exec(stdout)![1]!;
    const warning = /^WARNING: KWOK's exec runs the command on THIS machine, as .+, in (\S+)$/m.exec(stdout);
    assert.ok(warning, stdout);
    const workDir = warning[1]!;
    assert.match(stdout, /no container, no isolation/);
    const kubectl = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((res) =>
        execFile(kubectlBin, ['--kubeconfig', kubeconfig, ...args], { timeout: 120_000 }, (err, o, e) =>
          res({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: o, stderr: e }),
        ),
      );
    // The README's commands, as printed.
    const created = await kubectl('create', 'deployment', 'demo', '--image=demo');
    assert.equal(created.stdout, 'deployment.apps/demo created\n', created.stderr);
    const rolled = await kubectl('rollout', 'status', 'deployment/demo', '--timeout=120s');
    assert.equal(rolled.code, 0, rolled.stderr);
    const logs = await kubectl('logs', 'deployment/demo');
    assert.equal(logs.stdout, `${POD_LOG_LINES.join('\n')}\n`, logs.stderr);
    const pwd = await kubectl('exec', 'deployment/demo', '--', 'pwd');
    assert.equal(pwd.stdout, `${workDir}\n`, pwd.stderr);
    const pod = (await kubectl('get', 'pod', '-l', 'app=demo', '-o', 'jsonpath={.items[0].metadata.name}'))
      .stdout;
    const cp = await kubectl('cp', join(root, 'README.md'), `${pod}:README.md`);
    assert.equal(cp.code, 0, cp.stderr);
    assert.equal(
      readFileSync(join(workDir, 'README.md'), 'utf8'),
      readFileSync(join(root, 'README.md'), 'utf8'),
    );
    child.kill('SIGINT');
    assert.equal(await exit, 0);
    assert.equal(existsSync(dirname(kubeconfig)), false, 'fixture data removed');
  } finally {
    child.kill('SIGKILL');
  }
});
