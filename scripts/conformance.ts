/**
 * `npm run conformance`: the upstream e2e suite (e2e.test) DIRECT and THROUGH THE PROXY, each
 * mode on its own fresh pods fixture (test/conformance/runner.ts), then docs/conformance.md
 * (test/conformance/report.ts). Builds e2e.test first if needed (`build.sh --pods --e2e`).
 *
 *   npm run conformance                         # the whole matrix (--subset=full), every mode, seed 1
 *   npm run conformance -- --modes=direct,sidecar --repeat=3
 *   npm run conformance -- --focus='\[sig-node\] ConfigMap' --out=/tmp/x.md
 *   npm run conformance -- --subset=ci          # the CI list (test/conformance/ci-subset.ts)
 *   npm run conformance -- --dir=/tmp/c --resume --modes=direct,sidecar   # reuse the runs in /tmp/c
 *   npm run conformance -- --modes=direct,listed --proxy-arg=--protobuf-answers=cache
 *   npm run conformance -- --dir=/tmp/c --only=direct-2,listed-1   # some runs (beside other invocations) …
 *   npm run conformance -- --dir=/tmp/c --resume --repeat=3        # … then the page from all of them
 *
 * Flags: `--subset=full|ci` (default full: the families of test/conformance/full-subset.ts; ci:
 * the named list of test/conformance/ci-subset.ts), `--focus=RE` (instead of a subset), `--skip=RE`
 * (besides the skipped families of test/conformance/skips.ts), `--seed=N` (default 1),
 * `--modes=…` (direct,sidecar,delegated,listed), `--repeat=N` (runs per mode; durations are
 * medians), `--out=FILE` (default docs/conformance.md; `--out=` writes none), `--dir=DIR` (reports
 * and logs; default a temporary directory, kept), `--resume` (with `--dir`: a run whose
 * `DIR/<mode>-<n>/run.json` exists, written by an earlier invocation with the same focus, skip and
 * seed, is read instead of run again, so the matrix can be run one mode at a time; the page's date
 * and commit are the earliest run's), `--until=HH:MM` (UTC: a run still going then is interrupted
 * and keeps the specs it finished; the page says so per mode), `--proxy-arg=FLAG` (repeatable:
 * one more kube-cache-proxy flag for every proxied mode, after the mode's own, e.g.
 * `--proxy-arg=--protobuf-answers=cache`; the page lists them, and each proxied run leaves the
 * proxy's log in `DIR/<mode>-<n>/proxy.log`), `--only=MODE-N,…` (with `--dir`: make just these runs,
 * `DIR/<mode>-<n>`, whatever `--modes` and `--repeat` say, and write no page: invocations side by
 * side each make some runs of one matrix, and a last one with `--resume` reads them all and writes
 * the page; test/conformance/plan.ts). Exits 1 when a proxy died during a run or a run wrote no
 * report, 2 on a bad flag (or a `--resume` run made with another focus, skip, seed, `--proxy-arg` or
 * kube-controller-manager flags).
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CI_SPECS, focusFor } from '../test/conformance/ci-subset.ts';
import { differences, rows } from '../test/conformance/compare.ts';
import { FULL_FAMILIES, fullFocus } from '../test/conformance/full-subset.ts';
import type { SpecResult } from '../test/conformance/junit.ts';
import { planRuns } from '../test/conformance/plan.ts';
import { renderReport, totalsSentence } from '../test/conformance/report.ts';
import {
  ensureE2eTest,
  KCM_FLAGS,
  MODES,
  type Mode,
  runSuite,
  type SuiteRun,
} from '../test/conformance/runner.ts';
import { SKIP_FAMILIES, skipRegex } from '../test/conformance/skips.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const flags = new Map<string, string>();
/** `--proxy-arg=FLAG`, repeatable, in order. */
const proxyArgs: string[] = [];
for (const a of process.argv.slice(2)) {
  const m = /^--([a-z-]+)(?:=([\s\S]*))?$/.exec(a);
  if (
    !m ||
    ![
      'focus',
      'skip',
      'seed',
      'modes',
      'repeat',
      'out',
      'dir',
      'subset',
      'resume',
      'until',
      'proxy-arg',
      'only',
    ].includes(m[1]!)
  ) {
    process.stderr.write(`conformance: unknown argument ${a} (see scripts/conformance.ts)\n`);
    process.exit(2);
  }
  if (m[1] === 'proxy-arg') {
    if (!m[2]?.startsWith('-')) {
      process.stderr.write(
        `conformance: ${a}: expected --proxy-arg=--FLAG[=VALUE] (a kube-cache-proxy flag)\n`,
      );
      process.exit(2);
    }
    proxyArgs.push(m[2]);
  } else flags.set(m[1]!, m[2] ?? '');
}
const subset = flags.get('subset') ?? 'full';
if (subset !== 'full' && subset !== 'ci') {
  process.stderr.write(`conformance: --subset=${subset}: the subsets are full and ci\n`);
  process.exit(2);
}
const resume = flags.has('resume');
if (resume && !flags.get('dir')) {
  process.stderr.write('conformance: --resume needs --dir=DIR (the directory of the earlier runs)\n');
  process.exit(2);
}
const only = flags.get('only');
if (only !== undefined && !flags.get('dir')) {
  process.stderr.write('conformance: --only needs --dir=DIR (where a later --resume finds the runs)\n');
  process.exit(2);
}
// --until=HH:MM (UTC): each run started later gets the time left until then (see RunOptions.timeBoxMs).
const until = flags.get('until');
const untilMs = (() => {
  if (until === undefined) return undefined;
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(until);
  if (!m) {
    process.stderr.write(`conformance: --until=${until}: expected HH:MM (UTC)\n`);
    process.exit(2);
  }
  const d = new Date();
  d.setUTCHours(Number(m[1]), Number(m[2]), 0, 0);
  return d.getTime();
})();
const focus = flags.get('focus') ?? (subset === 'ci' ? focusFor(CI_SPECS) : fullFocus());
const extraSkip = flags.get('skip') ?? '';
const seed = Number(flags.get('seed') ?? 1);
const repeat = Number(flags.get('repeat') ?? 1);
const modes = (flags.get('modes') ?? 'direct,sidecar,delegated,listed').split(',') as Mode[];
// --only makes a part of the matrix: the page comes from the invocation that reads all parts.
const out = only !== undefined ? '' : (flags.get('out') ?? join(root, 'docs', 'conformance.md'));
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
const plan = (() => {
  try {
    return planRuns(modes, repeat, only);
  } catch (err) {
    process.stderr.write(`conformance: ${(err as Error).message}\n`);
    process.exit(2);
  }
})();

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
let startedAt = new Date();
let runCommit = commit;
const { e2eTest } = await ensureE2eTest();
const version = (await readFile(join(root, 'test', 'apiserver', 'VERSION'), 'utf8')).trim();
const dir = flags.get('dir') || (await mkdtemp(join(tmpdir(), 'kcp-conformance-')));
await mkdir(dir, { recursive: true });
const skip = [skipRegex(SKIP_FAMILIES), extraSkip].filter(Boolean).join('|');
log(
  `e2e.test ${version}, seed ${seed}, ${only !== undefined ? `runs ${only}` : `modes ${modes.join(',')} × ${repeat}`}; reports and logs in ${dir}`,
);

const runs: Partial<Record<Mode, SpecResult[][]>> = {};
/** Per proxied mode, one note per run: `up, caches equal` or what went wrong. */
const notes: Partial<Record<Mode, string[]>> = {};
const note = (mode: Mode, text: string) => {
  notes[mode] = [...(notes[mode] ?? []), text];
};
let featureGates = '';
let apiserverFlags = '';
let kcmFlags = '';
let broken = false;
for (const { mode, n: r } of plan) {
  const t0 = Date.now();
  const runDir = join(dir, `${mode}-${r}`);
  try {
    const saved = resume ? await readSavedRun(runDir, { focus, skip, seed, proxyArgs }) : undefined;
    if (saved) {
      log(`${mode} #${r}: reusing the run of ${saved.startedAt} (${saved.commit}) in ${runDir}`);
      if (new Date(saved.startedAt) < startedAt) {
        startedAt = new Date(saved.startedAt);
        runCommit = saved.commit;
      }
    }
    let run: SuiteRun;
    if (saved) run = saved.run;
    else {
      // The fixture takes about a minute to start: the time box counts from e2e.test's start.
      const timeBoxMs = untilMs === undefined ? undefined : Math.max(60_000, untilMs - Date.now() - 60_000);
      run = await runSuite({ mode, focus, skip, seed, dir: runDir, e2eTest, log, timeBoxMs, proxyArgs });
      const record: SavedRun = {
        focus,
        skip,
        seed,
        proxyArgs,
        startedAt: new Date(t0).toISOString(),
        commit,
        run,
      };
      await writeFile(join(runDir, 'run.json'), JSON.stringify(record));
    }
    runs[mode] = [...(runs[mode] ?? []), run.specs];
    featureGates = run.featureGates;
    apiserverFlags = run.apiserverFlags ?? '';
    kcmFlags = run.kcmFlags ?? '';
    if (run.proxyAlive === false) broken = true;
    if (mode !== 'direct') {
      const bad = run.cacheMismatches ?? [];
      note(
        mode,
        (run.stoppedAfter === undefined
          ? ''
          : `stopped by the time box after ${(run.stoppedAfter / 60).toFixed(0)} min (${run.specs.length} specs ran to an end); `) +
          (run.proxyAlive === false
            ? 'EXITED during the suite'
            : `${
                bad.length === 0
                  ? 'up, caches equal'
                  : `up, ${bad.length} cache(s) differ: ${bad.map((b) => b.resource).join(', ')}`
              }; ${run.served?.cache ?? 0} requests answered from the cache, ${run.served?.upstream ?? 0} upstream`),
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

const argv = process.argv
  .slice(2)
  // What regenerates the page in one invocation: not where it was kept, nor its time guard.
  .filter(
    (a) =>
      !a.startsWith('--dir=') && !a.startsWith('--out=') && !a.startsWith('--until=') && a !== '--resume',
  );
const meta = {
  version,
  seed,
  focus,
  // The subsets' focus expressions are long alternations: the page names the list.
  ...(flags.has('focus')
    ? {}
    : subset === 'ci'
      ? {
          focusLabel: `the CI list, \`test/conformance/ci-subset.ts\` (${CI_SPECS.length} specs, each a row below)`,
        }
      : {
          focusLabel: `the full list, \`test/conformance/full-subset.ts\`: ${FULL_FAMILIES.map((f) => f.family).join('; ')}`,
        }),
  extraSkip,
  date: `${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  commit: runCommit,
  featureGates,
  apiserverFlags,
  kcmFlags,
  proxyArgs: proxyArgs.join(' '),
  repeat,
  // Quoted for a POSIX shell, so the page's command runs as written (a focus has spaces and `*`).
  command: ['npm run conformance --', ...argv.map(shellQuote)].join(' ').replace(/ --$/, ''),
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

/** `arg` as one POSIX shell word: as is when it has only safe characters, else single-quoted. */
function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** What `run.json` holds: one run of {@link runSuite} and what it was run with. */
interface SavedRun {
  focus: string;
  skip: string;
  seed: number;
  /** The `--proxy-arg` flags (absent in runs saved before the flag existed: none). */
  proxyArgs?: string[];
  /** ISO time the run began. */
  startedAt: string;
  /** The proxy's commit when it ran (as the page shows it). */
  commit: string;
  run: SuiteRun;
}

/**
 * The run saved in `runDir/run.json`, or undefined when there is none. Exits 2 when it was made
 * with another focus, skip, seed, `--proxy-arg` (a proxied run) or kube-controller-manager flags
 * (its results would not belong on the same page).
 */
async function readSavedRun(
  runDir: string,
  want: { focus: string; skip: string; seed: number; proxyArgs: string[] },
): Promise<SavedRun | undefined> {
  const text = await readFile(join(runDir, 'run.json'), 'utf8').catch(() => '');
  if (!text) return undefined;
  const saved = JSON.parse(text) as SavedRun;
  // A direct run does not depend on the proxy's flags: it can be shared by pages that differ in them.
  const sameProxy =
    saved.run.mode === 'direct' || (saved.proxyArgs ?? []).join('\0') === want.proxyArgs.join('\0');
  // kube-controller-manager's flags set how long the quota status spec waits (KCM_FLAGS).
  const sameKcm = (saved.run.kcmFlags ?? '') === KCM_FLAGS.join(' ');
  if (
    saved.focus !== want.focus ||
    saved.skip !== want.skip ||
    saved.seed !== want.seed ||
    !sameProxy ||
    !sameKcm
  ) {
    process.stderr.write(
      `conformance: --resume: ${runDir}/run.json was run with another focus, skip, seed, --proxy-arg or kube-controller-manager flags; use another --dir\n`,
    );
    process.exit(2);
  }
  return saved;
}
