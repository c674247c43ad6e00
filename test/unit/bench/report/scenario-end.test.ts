import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { endScenario } from '../../../../bench/report/scenario-end.ts';

describe('bench/report/scenario-end', () => {
  it('writes NAME.json, the NAME block of docs/benchmarks.md, and exit code 1 for a failed row', (t) => {
    const root = mkdtempSync(join(tmpdir(), 'kcp-end-'));
    const out: string[] = [];
    const logged: string[] = [];
    t.mock.method(process.stdout, 'write', (s: string) => out.push(s));
    const exitCode = process.exitCode;
    try {
      mkdirSync(join(root, 'docs'));
      writeFileSync(join(root, 'docs/benchmarks.md'), 'a\n<!-- x:start -->\nold\n<!-- x:end -->\nb\n');
      const failures = [{ scenario: 'x', row: 'r', error: 'boom', atS: 1 }];
      endScenario({
        name: 'x',
        quick: false,
        kubeApiserver: 'v1.37.2',
        t0: performance.now() - 2000,
        extra: { loadavgAtStart: [0.5] },
        results: { rows: [1, 2], failures },
        render: (r) => `rows ${r.rows.length}, ${r.mode}, ${r.loadavgAtStart.join()}`,
        failed: 'failed rows',
        log: (m) => logged.push(m),
        root,
      });
      const file = JSON.parse(readFileSync(join(root, 'bench/results/x.json'), 'utf8'));
      assert.deepEqual(Object.keys(file), [
        'date',
        'mode',
        'kubeApiserver',
        'node',
        'totalS',
        'loadavgAtStart',
        'rows',
        'failures',
      ]);
      assert.equal(file.mode, 'full');
      assert.ok(file.totalS >= 2);
      assert.equal(
        readFileSync(join(root, 'docs/benchmarks.md'), 'utf8'),
        'a\n<!-- x:start -->\nrows 2, full, 0.5\n<!-- x:end -->\nb\n',
      );
      assert.deepEqual(out, ['rows 2, full, 0.5\n']);
      assert.match(logged[0]!, /^x: done in [\d.]+ s, 1 failed rows → .*bench\/results\/x\.json$/);
      assert.equal(process.exitCode, 1);
    } finally {
      process.exitCode = exitCode;
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a quick run writes NAME-quick.json and leaves the docs alone', (t) => {
    const root = mkdtempSync(join(tmpdir(), 'kcp-end-'));
    t.mock.method(process.stdout, 'write', () => true);
    try {
      endScenario({
        name: 'y',
        quick: true,
        kubeApiserver: 'v1.37.2',
        t0: performance.now(),
        results: { failures: [] },
        render: () => 'md',
        failed: 'failed runs',
        log: () => {},
        root,
      });
      assert.equal(JSON.parse(readFileSync(join(root, 'bench/results/y-quick.json'), 'utf8')).mode, 'quick');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
