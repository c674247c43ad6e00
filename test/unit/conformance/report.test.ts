import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SpecResult } from '../../conformance/junit.ts';
import { KNOWN_DIFFERENCES, renderReport, totalsSentence } from '../../conformance/report.ts';
import { LISTED_RESOURCES } from '../../conformance/runner.ts';
import { SKIP_FAMILIES } from '../../conformance/skips.ts';
import { tableRows } from '../../support/markdown.ts';

const spec = (name: string, state: string, seconds: number, message = ''): SpecResult => ({
  name,
  state,
  seconds,
  message,
  filtered: false,
});
const compaction = Object.keys(KNOWN_DIFFERENCES).find((n) => n.includes('API chunking'))!;
const runs = {
  direct: [
    [spec('[sig-a] w | x', 'passed', 2), spec(compaction, 'passed', 70), spec('[sig-a] f', 'failed', 1, 'x')],
  ],
  sidecar: [
    [
      spec('[sig-a] w | x', 'passed', 3),
      spec(compaction, 'failed', 600, 'Expected\n440'),
      spec('[sig-a] f', 'failed', 1),
    ],
  ],
};
const meta = {
  version: 'v1.37.2',
  seed: 7,
  focus: '\\[sig-a\\]',
  extraSkip: '',
  date: '2026-12-06 09:00 UTC',
  commit: 'abc1234',
  featureGates: '',
  apiserverFlags: '--etcd-compaction-interval=1m',
  kcmFlags: '--resource-quota-sync-period=2s',
  repeat: 1,
  command: 'npm run conformance -- --seed=7',
};

describe('docs/conformance.md rendering', () => {
  const md = renderReport(meta, runs, SKIP_FAMILIES, { sidecar: 'up, caches equal' });
  const cells = tableRows(md);

  it('records how to regenerate the run', () => {
    for (const [k, v] of [
      ['e2e.test', 'v1.37.2 (`k8s.io/kubernetes/test/e2e`)'],
      ['seed', '7'],
      ['commit', 'abc1234'],
      ['feature gates', 'the defaults of kube-apiserver v1.37.2 (none set)'],
      ['apiserver flags', '`--etcd-compaction-interval=1m` (besides the defaults)'],
      ['kube-controller-manager flags', "`--resource-quota-sync-period=2s` (besides the pods fixture's)"],
      ['command', '`npm run conformance -- --seed=7`'],
      ['proxy flags', "each mode's own (below), no others"],
    ])
      assert.ok(
        cells.some((r) => r[0] === k && r[1] === v),
        `${k}: ${v}`,
      );
  });

  it('records the extra proxy flags (--proxy-arg) of the proxied modes', () => {
    const withArgs = tableRows(
      renderReport(
        {
          ...meta,
          proxyArgs: '--protobuf-answers=cache --log-level=debug',
          command:
            'npm run conformance -- --proxy-arg=--protobuf-answers=cache --proxy-arg=--log-level=debug',
        },
        runs,
        SKIP_FAMILIES,
      ),
    );
    assert.deepEqual(
      withArgs.find((r) => r[0] === 'proxy flags'),
      [
        'proxy flags',
        "`--protobuf-answers=cache --log-level=debug` in every proxied mode, after the mode's own",
      ],
    );
    assert.deepEqual(
      withArgs.find((r) => r[0] === 'command'),
      [
        'command',
        '`npm run conformance -- --proxy-arg=--protobuf-answers=cache --proxy-arg=--log-level=debug`',
      ],
    );
  });

  it('totals per mode, with the differences and the proxy health', () => {
    const sidecar = cells.find((r) => r[0] === 'sidecar')!;
    assert.deepEqual(sidecar.slice(2), ['3', '1', '2', '1', '0', 'up, caches equal']);
    const direct = cells.find((r) => r[0] === 'direct')!;
    assert.deepEqual(direct.slice(2), ['3', '2', '1', '—', '—', '—']);
  });

  it('lists each difference with the known note and the first failure line; one row per spec', () => {
    assert.match(
      md,
      /- \*\*sidecar\*\*: .*API chunking.*passed direct \(70\.0 s\), failed through the proxy \(600\.0 s\)\./,
    );
    assert.match(md, /fixed since this difference was found: the proxy answered a continue token/);
    assert.match(md, /Failure: `Expected`/);
    assert.ok(
      cells.some((r) => r[0] === '[sig-a] w \\| x' && r[1] === 'passed 2.0 s' && r[2] === 'passed 3.0 s'),
    );
    assert.equal(cells.filter((r) => r[0] === 'admission webhooks').length, 1);
  });

  it('a named list is shown by its label instead of its focus expression; the listed mode names its resources', () => {
    const page = renderReport(
      { ...meta, focusLabel: 'the CI list, `test/conformance/ci-subset.ts` (22 specs, each a row below)' },
      { direct: runs.direct, listed: runs.sidecar },
      SKIP_FAMILIES,
    );
    const rowsOf = tableRows(page);
    assert.ok(
      rowsOf.some(
        (r) =>
          r[0] === 'focus' &&
          r[1] === 'the CI list, `test/conformance/ci-subset.ts` (22 specs, each a row below)',
      ),
    );
    const listed = rowsOf.find((r) => r[0] === 'listed')!;
    assert.equal(
      listed[1],
      `loopback plain HTTP, a configured resource list (\`--resources=${LISTED_RESOURCES}\`)`,
    );
  });

  it('the totals sentence', () => {
    assert.equal(
      totalsSentence(runs),
      'direct 2 of 3 passed, sidecar 1 of 3 passed; 1 result difference, 0 over the time allowance',
    );
  });
});
