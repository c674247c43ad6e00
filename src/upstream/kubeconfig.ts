/**
 * Kubeconfig loading for the upstream connection, via @kubernetes/client-node.
 * Exports {@link loadKubeConfig} and its source / result types. File precedence follows
 * client-node's `loadFromDefault`; the user's `tokenFile` is resolved against the kubeconfig's
 * directory as kubectl does (client-go clientcmd), so token rotation can re-read it.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
// config.js directly, not the package index (which re-exports the whole generated API client):
// see ./lean-client-node.ts.
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { parse, stringify } from 'yaml';
import { KubeconfigError } from '../util/errors.ts';

/** Where to read the upstream's connection settings from. */
export interface KubeConfigSource {
  /** Path of a kubeconfig file; wins over `KUBECONFIG` and in-cluster. */
  kubeconfig?: string;
  /** Use the pod's service account (`/var/run/secrets/kubernetes.io/serviceaccount`). */
  inCluster?: boolean;
  /** Context to use instead of the file's `current-context`. */
  context?: string;
  /** Prefix of the service-account mount path for in-cluster config (tests); default "". */
  inClusterPathPrefix?: string;
}

/** A loaded kubeconfig plus what client-node drops on load that we need for rotation. */
export interface LoadedKubeConfig {
  kc: KubeConfig;
  /**
   * Path of the bearer-token file to re-read as it rotates: the kubeconfig user's `token-file`
   * (client-node reads it once at load) or the in-cluster service-account token.
   */
  tokenFile: string | undefined;
}

/**
 * Loads the upstream's settings via @kubernetes/client-node: an explicit file, else a single
 * `KUBECONFIG` file, else client-node's `loadFromDefault` (merged `KUBECONFIG`, `~/.kube/config`,
 * in-cluster when no file exists). Throws {@link KubeconfigError}, one line naming the file when
 * there is one, when nothing usable is found (no kubeconfig at all, a file that cannot be read or
 * parsed, no current cluster with a server URL).
 */
export function loadKubeConfig(src: KubeConfigSource = {}): LoadedKubeConfig {
  const kc = new KubeConfig();
  let tokenFile: string | undefined;
  const envFiles = process.env.KUBECONFIG?.split(path.delimiter).filter((p) => p !== '') ?? [];
  const file = src.kubeconfig ?? (src.inCluster || envFiles.length !== 1 ? undefined : envFiles[0]);
  if (file) {
    try {
      loadFile(kc, file);
    } catch (err) {
      throw new KubeconfigError(`kubeconfig ${file}: ${fileProblem(err)}`, { cause: err });
    }
    tokenFile = findTokenFile(file, kc, src.context);
  } else if (src.inCluster) {
    kc.loadFromCluster(src.inClusterPathPrefix);
  } else {
    // With nothing to load, client-node falls back to an unauthenticated http://localhost:8080
    // (the long-gone insecure port): fail now with what is missing instead of retrying forever.
    const home = process.env.HOME ?? '';
    if (
      envFiles.length === 0 &&
      !process.env.KUBERNETES_SERVICE_HOST &&
      !existsSync(path.join(home, '.kube', 'config'))
    ) {
      throw new KubeconfigError(
        'kubeconfig: none found: pass --kubeconfig, set KUBECONFIG, create ~/.kube/config, or run in a pod (KUBERNETES_SERVICE_HOST is unset)',
      );
    }
    kc.loadFromDefault();
  }
  if (src.context) kc.setCurrentContext(src.context);
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server)
    throw new KubeconfigError(`kubeconfig${file ? ` ${file}` : ''}: no current cluster with a server URL`);
  if (!tokenFile) {
    const provider = kc.getCurrentUser()?.authProvider as
      | { name?: string; config?: { tokenFile?: string } }
      | undefined;
    if (provider?.name === 'tokenFile' && provider.config?.tokenFile) tokenFile = provider.config.tokenFile;
  }
  return { kc, tokenFile };
}

/**
 * Why a kubeconfig file did not load, on one line: the errno code of a read (`EISDIR`,
 * `EACCES`), `invalid YAML: …` (the yaml package's message, its source excerpt folded), or
 * client-node's message for a document it rejects.
 */
function fileProblem(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { name?: string };
  if (typeof e.code === 'string' && e.syscall !== undefined) return `cannot read: ${e.code}`;
  const message = (e.message ?? String(err)).replace(/\s*\n\s*/g, ' ').trim();
  return e.name === 'YAMLParseError' ? `invalid YAML: ${message}` : message;
}

/**
 * The user's token file: `tokenFile` is the key of client-go's kubeconfig (clientcmd/api/v1
 * `AuthInfo.TokenFile`, what kubectl reads and writes); `token-file` is the only one client-node
 * reads, kept for files written for it. Relative to the kubeconfig's directory, as kubectl does.
 */
function userTokenFile(user: Record<string, unknown> | undefined, dir: string): string | undefined {
  const tf = user?.tokenFile ?? user?.['token-file'];
  if (typeof tf !== 'string' || tf === '') return undefined;
  return path.isAbsolute(tf) ? tf : path.join(dir, tf);
}

/**
 * client-node reads only `token-file` while parsing, relative to the process's cwd, and ignores
 * client-go's `tokenFile` (the request would go out anonymous); kubectl resolves every path
 * relative to the kubeconfig file. Pass client-node the token file as an absolute `token-file`.
 */
function loadFile(kc: KubeConfig, file: string): void {
  const dir = path.dirname(path.resolve(file));
  const raw = parse(readFileSync(file, 'utf8')) as { users?: { user?: Record<string, unknown> }[] } | null;
  for (const u of raw?.users ?? []) {
    const tf = userTokenFile(u.user, dir);
    if (tf !== undefined) u.user!['token-file'] = tf;
  }
  kc.loadFromString(stringify(raw ?? {}));
  kc.makePathsAbsolute(dir);
}

/** The current user's `tokenFile` / `token-file` from the raw kubeconfig (relative paths resolved against it). */
function findTokenFile(file: string, kc: KubeConfig, context: string | undefined): string | undefined {
  try {
    const raw = parse(readFileSync(file, 'utf8')) as {
      'current-context'?: string;
      contexts?: { name: string; context?: { user?: string } }[];
      users?: { name: string; user?: Record<string, unknown> }[];
    };
    const ctxName = context ?? kc.getCurrentContext();
    const userName = raw.contexts?.find((c) => c.name === ctxName)?.context?.user;
    return userTokenFile(raw.users?.find((u) => u.name === userName)?.user, path.dirname(path.resolve(file)));
  } catch {
    return undefined;
  }
}
