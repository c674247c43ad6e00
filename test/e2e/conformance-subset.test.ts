/**
 * The upstream e2e suite's CI subset (test/conformance/ci-subset.ts) DIRECT and THROUGH THE PROXY
 * in sidecar mode (`--resources=auto`), each on its own fresh pods fixture
 * (test/conformance/runner.ts; `npm run conformance` runs the whole matrix by hand). Every named
 * spec must run and pass direct, pass through the proxy within max(2 × its direct time, direct +
 * 10 s), and the proxy must come out of the suite up with caches equal to the apiserver's, having
 * answered requests from them.
 *
 * Needs e2e.test (`test/apiserver/build.sh --pods --e2e`; `npm test` builds it with
 * `KCP_CONFORMANCE=on`). Runs only with `KCP_CONFORMANCE=on`, which CI (`.ci/run`) sets: on a
 * developer's machine e2e.test's first build costs many minutes (docs/testing.md).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CI_SPECS, focusFor } from '../conformance/ci-subset.ts';
import { allowedSeconds } from '../conformance/compare.ts';
import { ensureE2eTest, runSuite, type SuiteRun } from '../conformance/runner.ts';

const off = process.env.KCP_CONFORMANCE !== 'on';

describe('upstream e2e subset: direct vs through the proxy (sidecar, --resources=auto)', {
  skip: off
    ? 'set KCP_CONFORMANCE=on to build e2e.test and run the upstream subset (CI does: docs/testing.md)'
    : false,
  timeout: 1_500_000,
}, () => {
  let direct: SuiteRun;
  let proxied: SuiteRun;
  const seed = 1;
  /** The reports and logs: removed when every test passed, kept (and named in failures) otherwise. */
  let dir = '';
  let passed = 0;

  before(
    async () => {
      const { e2eTest } = await ensureE2eTest();
      dir = await mkdtemp(join(tmpdir(), 'kcp-conformance-ci-'));
      const o = { focus: focusFor(CI_SPECS), skip: '', seed, e2eTest, log: (l: string) => console.log(l) };
      direct = await runSuite({ ...o, mode: 'direct', dir: join(dir, 'direct') });
      proxied = await runSuite({ ...o, mode: 'sidecar', dir: join(dir, 'sidecar') });
    },
    { timeout: 1_500_000 },
  );
  after(async () => {
    if (dir && passed === 3) await rm(dir, { recursive: true, force: true });
  });

  test('every named spec ran and passed direct', () => {
    assert.deepEqual(direct.specs.map((s) => s.name).sort(), [...CI_SPECS].sort());
    const failed = direct.specs
      .filter((s) => s.state !== 'passed')
      .map((s) => `${s.name}: ${s.state} ${s.message}`);
    assert.deepEqual(failed, [], `see ${direct.outputFile}`);
    passed++;
  });

  test('each passes through the proxy within max(2 × direct, direct + 10 s)', () => {
    assert.deepEqual(proxied.specs.map((s) => s.name).sort(), [...CI_SPECS].sort());
    const bad: string[] = [];
    for (const d of direct.specs.filter((s) => s.state === 'passed')) {
      const p = proxied.specs.find((s) => s.name === d.name)!;
      if (p.state !== 'passed')
        bad.push(`${d.name}: ${p.state} through the proxy: ${p.message.split('\n')[0]}`);
      else if (p.seconds > allowedSeconds(d.seconds))
        bad.push(`${d.name}: ${p.seconds.toFixed(1)} s through the proxy, ${d.seconds.toFixed(1)} s direct`);
    }
    assert.deepEqual(bad, [], `see ${proxied.outputFile}`);
    passed++;
  });

  test('the proxy came out of the suite up, every cache equal to the apiserver, having served from them', () => {
    assert.equal(proxied.proxyAlive, true);
    assert.deepEqual(proxied.cacheMismatches, []);
    // The suite's reads really went through the caches (not all upstream, e.g. for their media type).
    assert.ok(proxied.served!.cache > 0, JSON.stringify(proxied.served));
    passed++;
  });
});
