/**
 * Re-renders the Markdown and SVG of a results JSON (after a report change, without re-running):
 *   node bench/report/render.ts [bench/results/latest.json] [--docs]
 * `--docs` also rewrites docs/benchmarks.md and the README's headline, as a full run does, and
 * the `node-local` block of docs/benchmarks.md from bench/results/node-local.json
 * (bench/scenarios/node-local.ts's own file).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderNodeLocal } from './node-local-report.ts';
import { renderMarkdown, renderSvg, replaceMarkedBlock, updateDocs } from './report.ts';
import type { BenchResults, NodeLocalReport } from './results.ts';

const args = process.argv.slice(2);
const file =
  args.find((a) => !a.startsWith('--')) ?? fileURLToPath(new URL('../results/latest.json', import.meta.url));
const r = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
const base = file.replace(/\.json$/, '');
const svgName = `${base.split('/').pop()}.svg`;
const md = renderMarkdown(r, svgName);
writeFileSync(`${base}.md`, md);
writeFileSync(`${base}.svg`, renderSvg(r));
if (args.includes('--docs')) {
  updateDocs(r, md, svgName);
  const nl = fileURLToPath(new URL('../results/node-local.json', import.meta.url));
  const doc = fileURLToPath(new URL('../../docs/benchmarks.md', import.meta.url));
  replaceMarkedBlock(
    doc,
    'node-local',
    renderNodeLocal(JSON.parse(readFileSync(nl, 'utf8')) as NodeLocalReport),
  );
}
