import { readFileSync } from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';

/** Where to read the upstream's connection settings from. */
export interface KubeConfigSource {
  /** Path of a kubeconfig file; wins over `KUBECONFIG` and in-cluster. */
  kubeconfig?: string;
  /** Use the pod's service account (`/var/run/secrets/kubernetes.io/serviceaccount`). */
  inCluster?: boolean;
  /** Context to use instead of the file's `current-context`. */
  context?: string;
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
 * Loads the upstream's settings via @kubernetes/client-node: an explicit file, else
 * `KUBECONFIG` / `~/.kube/config` / in-cluster (client-node `loadFromDefault`, which tries
 * in-cluster when no file exists). Throws when nothing usable is found (no current cluster).
 */
export function loadKubeConfig(src: KubeConfigSource = {}): LoadedKubeConfig {
  const kc = new KubeConfig();
  let tokenFile: string | undefined;
  if (src.kubeconfig) {
    kc.loadFromFile(src.kubeconfig);
    tokenFile = findTokenFile(src.kubeconfig, kc, src.context);
  } else if (src.inCluster) {
    kc.loadFromCluster();
  } else {
    kc.loadFromDefault();
    const env = process.env.KUBECONFIG?.split(path.delimiter).find((p) => p !== '');
    if (env) tokenFile = findTokenFile(env, kc, src.context);
  }
  if (src.context) kc.setCurrentContext(src.context);
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw new Error('kubeconfig: no current cluster with a server URL');
  if (!tokenFile) {
    const provider = kc.getCurrentUser()?.authProvider as
      | { name?: string; config?: { tokenFile?: string } }
      | undefined;
    if (provider?.name === 'tokenFile' && provider.config?.tokenFile) tokenFile = provider.config.tokenFile;
  }
  return { kc, tokenFile };
}

/** The current user's `token-file` from the raw kubeconfig (relative paths resolved against it). */
function findTokenFile(file: string, kc: KubeConfig, context: string | undefined): string | undefined {
  try {
    const raw = parse(readFileSync(file, 'utf8')) as {
      'current-context'?: string;
      contexts?: { name: string; context?: { user?: string } }[];
      users?: { name: string; user?: { 'token-file'?: string } }[];
    };
    const ctxName = context ?? kc.getCurrentContext();
    const userName = raw.contexts?.find((c) => c.name === ctxName)?.context?.user;
    const tf = raw.users?.find((u) => u.name === userName)?.user?.['token-file'];
    if (!tf) return undefined;
    return path.isAbsolute(tf) ? tf : path.join(path.dirname(file), tf);
  } catch {
    return undefined;
  }
}
