import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { renderNodeLocal } from '../../../bench/report/node-local-report.ts';
import { renderHeadline, renderMarkdown, replaceMarkedBlock } from '../../../bench/report/report.ts';
import type { BenchResults, NodeLocalReport } from '../../../bench/report/results.ts';
import { type RolloutDoc, renderRollout } from '../../../bench/report/rollout-report.ts';

// A full bench run rewrites the generated blocks of docs/benchmarks.md and README.md
// (bench/report/report.ts updateDocs); both must show the committed bench/results/latest.json.
const read = (p: string) => readFileSync(new URL(`../../../${p}`, import.meta.url), 'utf8');
const latest = JSON.parse(read('bench/results/latest.json')) as BenchResults;

/** The text between `<!-- NAME:start -->` and `<!-- NAME:end -->`, trimmed. */
function block(doc: string, name: string): string {
  const a = doc.indexOf(`<!-- ${name}:start -->`);
  const b = doc.indexOf(`<!-- ${name}:end -->`);
  assert.ok(a >= 0 && b > a, `the ${name} markers are present`);
  return doc.slice(a + `<!-- ${name}:start -->`.length, b).trim();
}

describe('benchmark blocks of the documentation', () => {
  it('docs/benchmarks.md holds the report of bench/results/latest.json, chart linked from docs/', () => {
    const want = renderMarkdown(latest, 'latest.svg').replaceAll(
      '(latest.svg)',
      '(../bench/results/latest.svg)',
    );
    assert.equal(
      block(read('docs/benchmarks.md'), 'bench'),
      want.trim(),
      'stale: node bench/report/render.ts --docs',
    );
  });

  it("README.md holds the same run's headline", () => {
    assert.equal(block(read('README.md'), 'bench-headline'), renderHeadline(latest));
    assert.match(renderHeadline(latest), /^- LIST all pods \(RV=0\): proxy [\d.,]+× the req\/s/);
  });

  it('docs/benchmarks.md holds the node-local report of bench/results/node-local.json', () => {
    const nl = JSON.parse(read('bench/results/node-local.json')) as NodeLocalReport;
    assert.equal(
      block(read('docs/benchmarks.md'), 'node-local'),
      renderNodeLocal(nl),
      'stale: rerun bench/scenarios/node-local.ts',
    );
    assert.equal(nl.mode, 'full');
    assert.equal(nl.params.nodes, 20);
  });

  it('docs/benchmarks.md holds the rollout rows of bench/results/rollout.json', () => {
    const r = JSON.parse(read('bench/results/rollout.json')) as RolloutDoc;
    assert.equal(
      block(read('docs/benchmarks.md'), 'rollout'),
      renderRollout(r),
      'stale: node bench/tools/rollout.ts --render bench/results/rollout.json --docs',
    );
    assert.equal(r.rows.filter((x) => x.mode === 'warm').length, r.params.runs);
  });

  it('replaceMarkedBlock rewrites only the text between the markers, and nothing without them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kcp-docs-'));
    try {
      const f = join(dir, 'doc.md');
      writeFileSync(f, 'before\n<!-- x:start -->\nold\n<!-- x:end -->\nafter\n');
      assert.equal(replaceMarkedBlock(f, 'x', 'new'), true);
      assert.equal(readFileSync(f, 'utf8'), 'before\n<!-- x:start -->\nnew\n<!-- x:end -->\nafter\n');
      assert.equal(replaceMarkedBlock(f, 'y', 'other'), false);
      assert.equal(readFileSync(f, 'utf8'), 'before\n<!-- x:start -->\nnew\n<!-- x:end -->\nafter\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
