/**
 * `npm test`: the whole suite in ONE node:test run — unit tests and end-to-end tests against ONE
 * shared real kube-apiserver + etcd (test/fixture), started here and stopped at the end; each e2e
 * file reaches it through `KCP_FIXTURE`. Builds the fixture binaries first if needed.
 *
 *   npm test                    # everything
 *   npm test -- --unit-only     # unit + scripted-upstream integration tests, no fixture
 *   npm test -- --e2e-only
 *   npm test -- test/e2e/foo.test.ts   # chosen files (fixture started if any is under test/e2e)
 *
 * Ends with a plain `tests: N passed, N failed, N skipped` line; exit code 1 on any failure.
 */
import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBuildScript } from '../test/fixture/fixture.ts';
import { startFixture } from '../test/fixture/index.ts';
import { ensurePodsBinaries } from '../test/fixture/pods-fixture.ts';

const args = process.argv.slice(2);
const unitOnly = args.includes('--unit-only');
const e2eOnly = args.includes('--e2e-only');
const files = args.filter((a) => !a.startsWith('--'));
const patterns =
  files.length > 0
    ? files
    : [
        ...(e2eOnly ? [] : ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts']),
        ...(unitOnly ? [] : ['test/e2e/**/*.test.ts']),
      ];
const needsFixture = patterns.some((p) => p.includes('e2e'));
// The files that start the pods fixture (kube-controller-manager, kube-scheduler, kwok) get its
// binaries built here, before their own timeouts run (about 9 minutes more on a cold machine).
const PODS_FIXTURE_FILES =
  /e2e\/\*\*|kubectl-pods|bench-quick|identity-people|conformance-subset|control-plane|table-kwok-nodes/;
const needsPods = patterns.some((p) => PODS_FIXTURE_FILES.test(p));
// test/e2e/conformance-subset.test.ts runs the upstream e2e suite only with KCP_CONFORMANCE=on,
// which CI sets (.ci/run): e2e.test is then built here too when missing (many minutes on a cold
// machine, docs/testing.md), so a developer's npm test leaves it out unless asked.
const needsE2eTest =
  process.env.KCP_CONFORMANCE === 'on' && patterns.some((p) => /e2e\/\*\*|conformance-subset/.test(p));

const env: NodeJS.ProcessEnv = { ...process.env };
let stopFixture = async () => {};
if (needsE2eTest) await runBuildScript(['--pods', '--e2e']);
else if (needsPods) await ensurePodsBinaries();
if (needsFixture) {
  const t0 = Date.now();
  const f = await startFixture({ verbose: true });
  stopFixture = () => f.stop();
  env.KCP_FIXTURE = join(f.dir, 'fixture.json');
  process.stderr.write(`test: fixture ${f.version} ready at ${f.server} in ${Date.now() - t0} ms\n`);
}
const onSignal = async () => {
  await stopFixture();
  process.exit(130);
};
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);

const tap = join(tmpdir(), `kcp-test-${process.pid}.tap`);
const code = await new Promise<number>((resolve) => {
  const child = spawn(
    process.execPath,
    [
      '--test',
      '--test-concurrency=2',
      '--test-timeout=600000',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=tap',
      `--test-reporter-destination=${tap}`,
      ...patterns,
    ],
    { stdio: 'inherit', env },
  );
  child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0)));
});
await stopFixture();

const summary = await readFile(tap, 'utf8').catch(() => '');
await rm(tap, { force: true });
const count = (k: string) => Number(summary.match(new RegExp(`^# ${k} (\\d+)$`, 'm'))?.[1] ?? 0);
const passed = count('pass');
const failed = count('fail') + count('cancelled');
const skipped = count('skipped') + count('todo');
process.stdout.write(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
if (passed + failed === 0) {
  process.stderr.write('test: no test ran\n');
  process.exit(1);
}
process.exit(code === 0 && failed === 0 ? 0 : 1);
