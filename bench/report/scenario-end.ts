/**
 * The one ending of a scenario run on its own (`node bench/scenarios/node-local.ts`,
 * `node bench/scenarios/on-demand.ts`), shared instead of copied: the scenario's results with
 * when and on what it ran go to bench/results/NAME.json (`--quick`: NAME-quick.json); a full run
 * also rewrites the `NAME` block of docs/benchmarks.md with the scenario's Markdown; the Markdown
 * goes to stdout, a `done` line to the log, and the exit code is 1 when a row failed.
 * (bench/run.ts ends the whole bench its own way: three files and the README's headline.)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { round } from '../support/proc.ts';
import { replaceMarkedBlock } from './report.ts';
import type { FailedRow } from './results.ts';

/** The repository root (bench/report/ is two levels below it). */
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What a stand-alone run's file adds to the scenario's results. */
export interface StandaloneHeader {
  date: string;
  mode: string;
  kubeApiserver: string;
  node: string;
  totalS: number;
}

/**
 * Writes, publishes and prints the results `r` of scenario `name` (see the module docstring).
 * `t0`: performance.now() when the run began; `extra`: fields of the file after `totalS`;
 * `failed`: how the log line names the failures (`failed rows`, `failed runs`); `root`: the
 * repository whose bench/results/ and docs/benchmarks.md are written (tests pass a copy).
 */
export function endScenario<R extends { failures: FailedRow[] }, E extends object = object>(o: {
  name: string;
  quick: boolean;
  kubeApiserver: string;
  t0: number;
  extra?: E;
  results: R;
  render: (results: StandaloneHeader & E & R) => string;
  failed: string;
  log: (msg: string) => void;
  root?: string;
}): void {
  const root = o.root ?? REPO_ROOT;
  const r = o.results;
  const results = {
    date: new Date().toISOString(),
    mode: o.quick ? 'quick' : 'full',
    kubeApiserver: o.kubeApiserver,
    node: process.version,
    totalS: round((performance.now() - o.t0) / 1000),
    ...(o.extra as E),
    ...r,
  };
  const dir = join(root, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, o.quick ? `${o.name}-quick.json` : `${o.name}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  const md = o.render(results);
  if (!o.quick) replaceMarkedBlock(join(root, 'docs/benchmarks.md'), o.name, md);
  process.stdout.write(`${md}\n`);
  o.log(`${o.name}: done in ${results.totalS} s, ${r.failures.length} ${o.failed} → ${file}`);
  if (r.failures.length) process.exitCode = 1;
}
