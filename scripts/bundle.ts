/**
 * Bundles the CLI (`src/cli.ts`, types stripped as Node strips them: the source uses erasable
 * TypeScript only) and the dependencies it loads at start into `dist/kube-cache-proxy.js` and
 * the chunks beside it (what `src/cli.ts` imports dynamically after its Node version check):
 * what the npm bin and the image run (issue 12, idle RSS). Run by `npm run build` after `tsc`
 * (which type-checks and emits `dist/src/`, the modules one by one);
 * `node scripts/bundle.ts [OUTFILE]`.
 *
 * Why: resolving and loading the ~570 module files of the unbundled tree one by one is work
 * hot enough that V8 optimizes Node's own module loader with TurboFan at boot, which touches
 * pages of the compiler's code in the `node` binary; with 6 files the proxy starts with ~7 MiB
 * less RSS (docs/benchmarks.md, idle RSS).
 *
 * What is NOT in the file, and is loaded from `node_modules` at run time as before (so the image
 * keeps its production `node_modules`): undici (src/upstream/undici-core.ts requires the files
 * it needs through `createRequire`; bundled, its code is 0.8 MB more source for no RSS gain,
 * measured), and the modules client-node-lazy.ts loads on first use (Azure, GCP and OIDC auth
 * providers, proxy agents). client-node's `config.js` imports are answered as the run-time hook
 * answers them (src/upstream/lean-client-node.ts, {@link leanRedirect}); the build fails when
 * the bundle would contain client-node's generated API (`gen/`) or undici's index anyway.
 *
 * esbuild (devDependency, build time only) is the bundler: an ESM bundle for Node with code splitting,
 * the shebang of src/cli.ts kept, a `require` for the CommonJS dependencies that call it at run
 * time (ESM output has none), a source map beside it. Whitespace and comments are removed (names
 * are kept, so stack traces name the functions; `node --enable-source-maps` maps the positions):
 * V8 holds the source of every script, as a two-byte string when it has any character beyond
 * Latin-1 (comments with `→`, `≥`); 1.6 instead of 2.4 MB in one-byte form is ~1.4 MiB less RSS.
 *
 * The bundle records the git revision it is built from (`--version` prints it;
 * src/util/build-info.ts): {@link buildRevision}.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { leanRedirect } from '../src/upstream/lean-client-node.ts';
import { gitRevision, UNKNOWN_REVISION } from '../src/util/build-info.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const upstreamDir = join(root, 'src/upstream');

/** Inputs that must never be in the bundle (what the lean loading exists to leave out). */
const FORBIDDEN = [/\/@kubernetes\/client-node\/dist\/gen\/(index|apis|models)\b/, /\/undici\/index\.js$/];

/** client-node's `config.js` imports answered by the modules of src/upstream/. */
const leanClientNode: Plugin = {
  name: 'lean-client-node',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      const target = leanRedirect(args.path, args.importer && pathToFileURL(args.importer).href);
      return target === undefined ? undefined : { path: join(upstreamDir, `${target}.ts`) };
    });
  },
};

/**
 * The revision a bundle records: `KCP_REVISION` when set and not empty (the Dockerfile's build
 * stage sets it from its `REVISION` build argument: its context has no .git), else the
 * checkout's `git rev-parse HEAD` (`-dirty` when tracked files differ), else `unknown`.
 */
export function buildRevision(env: Record<string, string | undefined> = process.env): string {
  const given = env.KCP_REVISION?.trim();
  return given || gitRevision(root) || UNKNOWN_REVISION;
}

/** What {@link bundle} wrote. */
export interface BundleResult {
  /** The entry file (what `node` runs). */
  outfile: string;
  /** Every file written but source maps: the entry and its chunks (absolute paths). */
  files: string[];
  /** Input files (paths relative to the repository), every module in the bundle. */
  inputs: string[];
  /** Size of {@link files} together, bytes. */
  bytes: number;
}

/**
 * Bundles `entry` (default src/cli.ts) into `outfile` (default dist/kube-cache-proxy.js) and its
 * chunks beside it (`<name>-chunk-<hash>.js`: what the entry imports dynamically). The
 * bundle `require`s undici and the lazily loaded client-node modules from the `node_modules`
 * found from `outfile`'s folder up, so it must be written inside the repository (or next to a
 * `node_modules` holding them). Throws esbuild's error when the build fails, and an Error naming
 * the inputs when the bundle would contain client-node's generated API or undici's index.
 * `revision` is what `--version` prints as the revision (default {@link buildRevision}).
 */
export async function bundle(
  opts: { entry?: string; outfile?: string; revision?: string } = {},
): Promise<BundleResult> {
  const outfile = opts.outfile ?? join(root, 'dist/kube-cache-proxy.js');
  const outdir = dirname(outfile);
  const name = basename(outfile, '.js');
  // Chunks of an earlier build have other hashes: remove them, not to ship stale files.
  for (const f of existsSync(outdir) ? readdirSync(outdir) : [])
    if (f.startsWith(`${name}-chunk-`)) rmSync(join(outdir, f));
  const result = await build({
    // client-node-config.js beside the entry: lean-client-node.ts answers a lazily loaded auth
    // provider's `./config.js` with it (its sibling URL), re-exporting the bundle's config.js.
    entryPoints: {
      [name]: opts.entry ?? join(root, 'src/cli.ts'),
      'client-node-config': join(upstreamDir, 'client-node-config.ts'),
    },
    outdir,
    entryNames: '[name]',
    chunkNames: `${name}-chunk-[hash]`,
    // cli.ts's dynamic imports stay dynamic (separate chunks): its Node version check runs
    // before anything needing Node >= 22.19 (e.g. `registerHooks`) is linked.
    splitting: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22.19',
    define: { __KCP_REVISION__: JSON.stringify(opts.revision ?? buildRevision()) },
    plugins: [leanClientNode],
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
    minifyWhitespace: true,
    // Node prints the source line of an uncaught error: keep the lines short.
    lineLimit: 160,
    banner: {
      js: "import { createRequire as __kcpCreateRequire } from 'node:module';\nconst require = __kcpCreateRequire(import.meta.url);",
    },
  });
  const inputs = Object.keys(result.metafile.inputs);
  const bad = inputs.filter((i) => FORBIDDEN.some((re) => re.test(i)));
  if (bad.length > 0)
    throw new Error(
      `${outfile} would contain what the lean loading leaves out: ${bad.slice(0, 5).join(', ')}`,
    );
  const js = Object.entries(result.metafile.outputs).filter(([o]) => o.endsWith('.js'));
  const files = js.map(([o]) => resolve(root, o));
  const bytes = js.reduce((n, [, out]) => n + out.bytes, 0);
  return { outfile, files, inputs, bytes };
}

if (import.meta.main) {
  try {
    const revision = buildRevision();
    const r = await bundle({ revision, ...(process.argv[2] ? { outfile: process.argv[2] } : {}) });
    process.stdout.write(
      `bundle: ${r.outfile} (${r.files.length} files, ${r.inputs.length} modules, ${(r.bytes / 2 ** 20).toFixed(1)} MiB, revision ${revision})\n`,
    );
  } catch (err) {
    process.stderr.write(`bundle: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
