/**
 * What `--version` prints: the package version and the git revision the program was built from.
 *
 * The revision comes, first found:
 * 1. from the bundle: scripts/bundle.ts (`npm run build`, the Docker image's build stage) replaces
 *    {@link __KCP_REVISION__} with the revision it was given (`KCP_REVISION`, which the
 *    Dockerfile sets from its `REVISION` build argument) or found (`git rev-parse HEAD` of the
 *    checkout it bundles), or `unknown`;
 * 2. from a source checkout (`node src/cli.ts`, `npm start`, the tests): `git rev-parse HEAD` of
 *    the repository this file is in, asked when `--version` runs, with `-dirty` appended when
 *    tracked files differ from it (as `git describe --dirty` marks it); only when that repository
 *    is kube-cache-proxy's own (not some project whose node_modules hold it);
 * 3. otherwise `unknown`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Replaced by a string literal in the bundle (esbuild `define`); undeclared when run from source. */
declare const __KCP_REVISION__: string | undefined;

/** The revision a build records when it knows none. */
export const UNKNOWN_REVISION = 'unknown';

/** The package root (the folder of kube-cache-proxy's package.json above this file) and its version. */
function packageInfo(): { root: string; version: string } | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'kube-cache-proxy' && pkg.version) return { root: dir, version: pkg.version };
    } catch {}
    dir = dirname(dir);
  }
  return undefined;
}

/** The package version (from the nearest kube-cache-proxy package.json above this file), or `unknown`. */
export function version(): string {
  return packageInfo()?.version ?? 'unknown';
}

/**
 * The git revision of the checkout at `root`: the 40-hex commit of HEAD, `-dirty` appended when a
 * tracked file differs from it (untracked files do not count). Undefined when `root` is not the
 * top of a git work tree (e.g. a package inside another project's node_modules), or git is
 * missing or fails. Runs `git` twice, 5 s at most each.
 */
export function gitRevision(root: string): string | undefined {
  const git = (args: string[]) =>
    execFileSync('git', ['-C', root, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    }).trim();
  try {
    const [top = '', head = ''] = git(['rev-parse', '--show-toplevel', 'HEAD']).split('\n');
    if (realpathSync(top) !== realpathSync(root) || !/^[0-9a-f]{40}$/.test(head)) return undefined;
    const dirty = git(['status', '--porcelain', '--untracked-files=no']) !== '';
    return dirty ? `${head}-dirty` : head;
  } catch {
    return undefined;
  }
}

/** The revision this program was built from: the bundle's stamp, else the source checkout's, else `unknown`. */
export function revision(): string {
  if (typeof __KCP_REVISION__ === 'string') return __KCP_REVISION__;
  const root = packageInfo()?.root;
  return (root && gitRevision(root)) || UNKNOWN_REVISION;
}

/** The `--version` line, without newline: `kube-cache-proxy 0.1.0 (revision 0123…abcd)`. */
export function versionLine(): string {
  return `kube-cache-proxy ${version()} (revision ${revision()})`;
}
