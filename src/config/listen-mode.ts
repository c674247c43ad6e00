/**
 * Which mode may listen where (docs/design.md §4): the checks `loadConfig` runs on a complete
 * config. A refusal is one line naming the missing flags (exit 2).
 */
import { ConfigError } from '../util/errors.ts';
import type { ListenAddress } from './listen-address.ts';

/** The settings the checks read (a subset of `Config`; no import of config.ts, which calls these). */
export interface ModeSettings {
  listen: ListenAddress;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clientCaFile?: string;
  delegatedAuth: boolean;
  hostNetwork: boolean;
}

/** Settings naming files that must exist. */
export const FILE_KEYS: ReadonlySet<string> = new Set([
  'kubeconfig',
  'tlsCertFile',
  'tlsPrivateKeyFile',
  'clientCaFile',
]);

/** Whether `host` is a loopback name or address (`localhost`, `127.0.0.0/8`, `::1`). */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host === '::1' || host === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** `a, b and c`. */
function andList(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/**
 * Which mode may listen where (docs/design.md §4): TLS needs both files; the client CA and
 * delegated auth need TLS; a non-loopback address or hostNetwork (a loopback shared by every
 * hostNetwork pod) needs TLS and delegated auth. One line naming the missing flags.
 * @throws ConfigError
 */
export function checkListenMode(c: ModeSettings, hostWhere: string): void {
  const tls = c.tlsCertFile !== undefined && c.tlsPrivateKeyFile !== undefined;
  if (c.tlsCertFile !== undefined && c.tlsPrivateKeyFile === undefined)
    throw new ConfigError('--tls-cert-file requires --tls-private-key-file');
  if (c.tlsPrivateKeyFile !== undefined && c.tlsCertFile === undefined)
    throw new ConfigError('--tls-private-key-file requires --tls-cert-file');
  if (c.clientCaFile !== undefined && !tls)
    throw new ConfigError('--client-ca-file requires --tls-cert-file and --tls-private-key-file');
  if (c.delegatedAuth && !tls)
    throw new ConfigError('--delegated-auth requires --tls-cert-file and --tls-private-key-file');
  const missing = [
    ...(tls ? [] : ['--tls-cert-file', '--tls-private-key-file']),
    ...(c.delegatedAuth ? [] : ['--delegated-auth']),
  ];
  if (missing.length === 0) return;
  const h = c.listen.host;
  const shown = `${h.includes(':') ? `[${h}]` : h}:${c.listen.port}`;
  if (!isLoopbackHost(h))
    throw new ConfigError(`--listen ${shown} is not a loopback address: it requires ${andList(missing)}`);
  if (c.hostNetwork) {
    throw new ConfigError(
      `${hostWhere}: the pod's loopback is shared by every hostNetwork pod of the node: it requires ${andList(missing)}`,
    );
  }
}
