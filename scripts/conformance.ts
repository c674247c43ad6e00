/**
 * `npm run conformance`: the upstream e2e suite (e2e.test) DIRECT and THROUGH THE PROXY, each
 * mode on its own fresh pods fixture (test/conformance/runner.ts), then docs/conformance.md
 * (test/conformance/report.ts). Builds e2e.test first if needed (`build.sh --pods --e2e`).
 *
 *   npm run conformance                         # sig-api-machinery Conformance, every mode, seed 1
 *   npm run conformance -- --modes=direct,sidecar --repeat=3
 *   npm run conformance -- --focus='\[sig-node\] ConfigMap' --out=/tmp/x.md
 *   npm run conformance -- --subset=ci          # the CI list (test/conformance/ci-subset.ts)
 *
 * Flags: `--focus=RE` (default {@link DEFAULT_FOCUS}), `--skip=RE` (besides the skipped families
 * of test/conformance/skips.ts), `--seed=N` (default 1), `--modes=…` (direct,sidecar,delegated,
 * listed), `--repeat=N` (runs per mode; durations are medians), `--out=FILE` (default
 * docs/conformance.md; `--out=` writes none), `--dir=DIR` (reports and logs; default a temporary
 * directory, kept). Exits 1 when a proxy died during a run or a run wrote no report, 2 on a bad
 * flag.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CI_SPECS, focusFor } from '../test/conformance/ci-subset.ts';
import { differences, rows } from '../test/conformance/compare.ts';
import type { SpecResult } from '../test/conformance/junit.ts';
import { renderReport, totalsSentence } from '../test/conformance/report.ts';
import { ensureE2eTest, MODES, type Mode, runSuite } from '../test/conformance/runner.ts';
import { SKIP_FAMILIES, skipRegex } from '../test/conformance/skips.ts';

/** The default focus: the sig-api-machinery Conformance specs (`[Slow]` included). */
export const DEFAULT_FOCUS = '\\[sig-api-machinery\\].*\\[Conformance\\]';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const flags = new Map<string, string>();
for (const a of process.argv.slice(2)) {
  const m = /^--([a-z]+)(?:=([\s\S]*))?$/.exec(a);
  if (!m || !['focus', 'skip', 'seed', 'modes', 'repeat', 'out', 'dir', 'subset'].includes(m[1]!)) {
    process.stderr.write(`conformance: unknown argument ${a} (see scripts/conformance.ts)\n`);
    process.exit(2);
  }
  flags.set(m[1]!, m[2] ?? '');
}
const subset = flags.get('subset');
if (subset !== undefined && subset !== 'ci') {
  process.stderr.write(`conformance: --subset=${subset}: only --subset=ci exists\n`);
  process.exit(2);
}
const focus = flags.get('focus') ?? (subset === 'ci' ? focusFor(CI_SPECS) : DEFAULT_FOCUS);
const extraSkip = flags.get('skip') ?? '';
const seed = Number(flags.get('seed') ?? 1);
const repeat = Number(flags.get('repeat') ?? 1);
const modes = (flags.get('modes') ?? 'direct,sidecar,delegated,listed').split(',') as Mode[];
const out = flags.get('out') ?? join(root, 'docs', 'conformance.md');
if (!Number.isInteger(seed) || !Number.isInteger(repeat) || repeat < 1) {
  process.stderr.write('conformance: --seed and --repeat take whole numbers (--repeat ≥ 1)\n');
  process.exit(2);
}
const badMode = modes.find((m) => !(m in MODES));
if (badMode !== undefined || modes[0] !== 'direct') {
  process.stderr.write(
    `conformance: --modes=${modes.join(',')}: the first must be direct, the others of ${Object.keys(MODES).join(',')}\n`,
  );
  process.exit(2);
}

const log = (line: string) => process.stderr.write(`conformance: ${line}\n`);
// The proxy that runs is the code at the start (and the date the run began).
const commit = (() => {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root }).toString().trim();
    const dirty =
      execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root }).length > 0;
    return `${sha}${dirty ? ' (with uncommitted changes)' : ''}`;
  } catch {
    return 'unknown';
  }
})();
const startedAt = new Date();
const { e2eTest } = await ensureE2eTest();
const version = (await readFile(join(root, 'test', 'apiserver', 'VERSION'), 'utf8')).trim();
const dir = flags.get('dir') || (await mkdtemp(join(tmpdir(), 'kcp-conformance-')));
const skip = [skipRegex(SKIP_FAMILIES), extraSkip].filter(Boolean).join('|');
log(`e2e.test ${version}, seed ${seed}, modes ${modes.join(',')} × ${repeat}; reports and logs in ${dir}`);

const runs: Partial<Record<Mode, SpecResult[][]>> = {};
/** Per proxied mode, one note per run: `up, caches equal` or what went wrong. */
const notes: Partial<Record<Mode, string[]>> = {};
const note = (mode: Mode, text: string) => {
  notes[mode] = [...(notes[mode] ?? []), text];
};
let featureGates = '';
let broken = false;
for (let r = 1; r <= repeat; r++) {
  for (const mode of modes) {
    const t0 = Date.now();
    try {
      const run = await runSuite({ mode, focus, skip, seed, dir: join(dir, `${mode}-${r}`), e2eTest, log });
      runs[mode] = [...(runs[mode] ?? []), run.specs];
      featureGates = run.featureGates;
      if (run.proxyAlive === false) broken = true;
      if (mode !== 'direct') {
        const bad = run.cacheMismatches ?? [];
        note(
          mode,
          run.proxyAlive === false
            ? 'EXITED during the suite'
            : `${
                bad.length === 0
                  ? 'up, caches equal'
                  : `up, ${bad.length} cache(s) differ: ${bad.map((b) => b.resource).join(', ')}`
              }; ${run.served?.cache ?? 0} requests answered from the cache, ${run.served?.upstream ?? 0} upstream`,
        );
      }
      const ok = run.specs.filter((s) => s.state === 'passed').length;
      log(`${mode} #${r}: ${ok} of ${run.specs.length} passed in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    } catch (err) {
      broken = true;
      if (mode !== 'direct') note(mode, `run failed: ${(err as Error).message.split('\n')[0]}`);
      log(`${mode} #${r}: ${(err as Error).message}`);
    }
  }
}

const argv = process.argv.slice(2).filter((a) => !a.startsWith('--dir=') && !a.startsWith('--out='));
const meta = {
  version,
  seed,
  focus,
  // The CI list's focus expression is a 3,000-character alternation: the page names the list.
  ...(subset === 'ci' && !flags.has('focus')
    ? {
        focusLabel: `the CI list, \`test/conformance/ci-subset.ts\` (${CI_SPECS.length} specs, each a row below)`,
      }
    : {}),
  extraSkip,
  date: `${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  commit,
  featureGates,
  repeat,
  command: ['npm run conformance --', ...argv].join(' ').replace(/ --$/, ''),
};
if (out) {
  const health = Object.fromEntries(Object.entries(notes).map(([m, n]) => [m, n.join('; ')]));
  await writeFile(out, renderReport(meta, runs, SKIP_FAMILIES, health));
  // The page must pass `npm run lint`: Biome pads the tables (a page outside the repository is
  // left as written: Biome ignores it).
  if (!relative(root, out).startsWith('..'))
    execFileSync(join(root, 'node_modules', '.bin', 'biome'), ['format', '--write', out], {
      stdio: 'ignore',
    });
  log(`wrote ${out}`);
}
log(totalsSentence(runs));
for (const d of differences(rows(runs)))
  log(
    `difference (${d.mode}, ${d.kind}): ${d.name}: direct ${d.direct.seconds.toFixed(1)} s, proxy ${d.proxied.states.join('/')} ${d.proxied.seconds.toFixed(1)} s`,
  );
process.exit(broken ? 1 : 0);
