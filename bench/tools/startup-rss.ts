/**
 * What each dependency costs at start (issue 12, idle RSS): one fresh Node process per stage,
 * each stage importing everything the one before did plus one piece, from the BUILT tree
 * (`npm run build`: dist/, as the image runs it, no type stripping). RSS (VmRSS) and V8 heapUsed
 * 2 s after the imports, and again after two forced full collections (`--expose-gc`); the
 * "+ MiB" column is the RSS step from the stage before (median of `--runs` processes, default 3).
 *   node bench/tools/startup-rss.ts [--runs N] [--json] [--idle [--modules] [--cpu LIST] [--node-options 'FLAGS']]
 * Stages: Node alone, + fastify, + undici (its dispatchers and Dispatcher API only, as
 * src/upstream/undici-core.ts loads them), + pino, + prom-client, + client-node's KubeConfig
 * (lean: src/upstream/lean-client-node.ts) loading a token kubeconfig, + every module of the
 * proxy (dist/src/main.js linked, not run). With `--idle`, the whole CLI as it ships (the
 * bundle, dist/kube-cache-proxy.js) running with an empty cache against a private fixture (the
 * bench/support/memory.ts row), and with `--modules` also the unbundled dist/src/cli.js.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startFixture } from '../../test/fixture/index.ts';
import { median } from '../scenarios/passthrough.ts';
import { toolArgs, words } from '../support/args.ts';
import { measureProxy } from '../support/memory.ts';
import { round } from '../support/proc.ts';
import { DIST_CLI, DIST_MODULES_CLI } from '../support/proxy-process.ts';

const MiB = 2 ** 20;
const dist = (p: string) =>
  pathToFileURL(fileURLToPath(new URL(`../../dist/src/${p}`, import.meta.url))).href;

/** One stage: a label and the module code that imports it (after the stages before). */
interface Stage {
  label: string;
  code: string;
}

/** The measured RSS of one stage (MiB, medians over the runs). */
export interface StartupRssRow {
  label: string;
  rssMiB: number;
  heapUsedMiB: number;
  rssGcMiB: number;
  heapUsedGcMiB: number;
  /** RSS (2 s) minus the stage before's. */
  deltaMiB: number;
}

function stages(kubeconfig: string): Stage[] {
  return [
    { label: 'Node alone', code: '' },
    { label: '+ fastify', code: "await import('fastify');" },
    // What the proxy loads of undici (src/upstream/undici-core.ts), not undici's whole index.
    { label: '+ undici (core)', code: `await import(${JSON.stringify(dist('upstream/undici-core.js'))});` },
    { label: '+ pino', code: "await import('pino');" },
    { label: '+ prom-client', code: "await import('prom-client');" },
    {
      label: '+ client-node KubeConfig (lean), kubeconfig loaded',
      code: `(await import(${JSON.stringify(dist('upstream/lean-client-node.js'))})).installLeanClientNode();
globalThis.kc = (await import(${JSON.stringify(dist('upstream/kubeconfig.js'))})).loadKubeConfig({ kubeconfig: ${JSON.stringify(kubeconfig)} });`,
    },
    {
      label: '+ every proxy module (main.js linked)',
      code: `await import(${JSON.stringify(dist('main.js'))});`,
    },
  ];
}

const PROBE = `
const { readFileSync } = await import('node:fs');
const sample = () => ({ rss: Number(/VmRSS:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024, heapUsed: process.memoryUsage().heapUsed });
await new Promise((r) => setTimeout(r, 2000));
const a = sample();
globalThis.gc(); globalThis.gc();
const b = sample();
process.stdout.write(JSON.stringify({ a, b }));
process.exit(0);
`;

type Sample = { rss: number; heapUsed: number };

function runOnce(code: string): Promise<{ a: Sample; b: Sample }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--expose-gc', '--input-type=module', '-e', code + PROBE],
      { cwd: fileURLToPath(new URL('../..', import.meta.url)) },
      (err, out, errOut) => {
        if (err) return reject(new Error(`${err.message}\n${errOut}`));
        resolve(JSON.parse(out));
      },
    );
  });
}

/** Measures every stage `runs` times (fresh processes, one at a time). */
export async function startupRss(runs = 3): Promise<StartupRssRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-startup-rss-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: bench}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`,
  );
  try {
    const rows: StartupRssRow[] = [];
    let code = '';
    for (const s of stages(kubeconfig)) {
      code += `${s.code}\n`;
      const xs: Array<{ a: Sample; b: Sample }> = [];
      for (let i = 0; i < runs; i++) xs.push(await runOnce(code));
      const m = (f: (x: (typeof xs)[number]) => number) => round(median(xs.map(f)) / MiB, 1);
      const rss = m((x) => x.a.rss);
      rows.push({
        label: s.label,
        rssMiB: rss,
        heapUsedMiB: m((x) => x.a.heapUsed),
        rssGcMiB: m((x) => x.b.rss),
        heapUsedGcMiB: m((x) => x.b.heapUsed),
        deltaMiB: round(rss - (rows.at(-1)?.rssMiB ?? 0), 1),
      });
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The CLI running with an empty cache, `runs` times against one private fixture (medians, MiB).
 * `nodeOptions` replace the Node flags of the CLI's shebang (what ships) when given.
 */
export async function idleRss(
  runs = 3,
  nodeOptions: string[] = [],
  cli = DIST_CLI,
  cpu = '0-1',
): Promise<StartupRssRow> {
  const f = await startFixture({ verbose: false });
  try {
    const xs: Array<Awaited<ReturnType<typeof measureProxy>>> = [];
    for (let i = 0; i < runs; i++)
      xs.push(
        await measureProxy({
          kubeconfig: f.kubeconfigs.adminToken,
          resource: 'limitranges',
          cpu,
          heapSnapshot: false,
          cli,
          ...(nodeOptions.length ? { nodeArgs: nodeOptions } : {}),
        }),
      );
    const m = (g: (x: (typeof xs)[number]) => number) => round(median(xs.map(g)) / MiB, 1);
    return {
      label: `the CLI running, empty cache${cli === DIST_CLI ? '' : ` (${relative(process.cwd(), cli)})`}${nodeOptions.length ? ` (${nodeOptions.join(' ')})` : ''}`,
      rssMiB: m((x) => x.at2s.rss),
      heapUsedMiB: m((x) => x.at2s.heapUsed),
      rssGcMiB: m((x) => x.afterGc.rss),
      heapUsedGcMiB: m((x) => x.afterGc.heapUsed),
      deltaMiB: 0,
    };
  } finally {
    await f.stop();
  }
}

if (import.meta.main) {
  const args = toolArgs({
    numbers: { runs: 3 },
    // --cpu LIST: the CLI's taskset (default both cores; the bench's memory rows pin it to one).
    strings: { cpu: '0-1' },
    lists: ['node-options'],
    flags: ['idle', 'modules', 'json'],
  });
  const { runs } = args;
  const rows = await startupRss(runs);
  if (args.idle) {
    const nodeOptions = words(args['node-options']);
    // --modules: also the unbundled tree (dist/src/cli.js), interleaved with the bundle.
    const clis = args.modules ? [DIST_MODULES_CLI, DIST_CLI] : [DIST_CLI];
    const linked = rows.at(-1)!.rssMiB;
    for (const cli of clis) {
      const idle = await idleRss(runs, nodeOptions, cli, args.cpu!);
      idle.deltaMiB = round(idle.rssMiB - linked, 1);
      rows.push(idle);
    }
  }
  if (args.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  else {
    process.stdout.write(
      '| stage | RSS MiB (2 s) | + MiB | heapUsed MiB | RSS after GC | heapUsed after GC |\n',
    );
    process.stdout.write('| --- | --- | --- | --- | --- | --- |\n');
    for (const r of rows)
      process.stdout.write(
        `| ${r.label} | ${r.rssMiB} | ${r.deltaMiB} | ${r.heapUsedMiB} | ${r.rssGcMiB} | ${r.heapUsedGcMiB} |\n`,
      );
  }
}
