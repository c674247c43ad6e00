/**
 * The connection to the upstream apiserver: base URL, shared undici connection pool with the
 * kubeconfig's TLS settings, and the credentials to send.
 * Exports the {@link Upstream} handle, its options and {@link createUpstream}, which builds it
 * from a kubeconfig using client-node's TLS resolution.
 */
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type { Dispatcher } from 'undici';
import { type Clock, realClock } from '../util/clock.ts';
import { KubeconfigError } from '../util/errors.ts';
import { FileReloader } from '../util/file-reloader.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import { parseCertKeyPair } from '../util/tls-files.ts';
import { type KubeConfigSource, type LoadedKubeConfig, loadKubeConfig } from './kubeconfig.ts';
import { SwappableDispatcher } from './swappable-dispatcher.ts';
import { FileTokenSource } from './token-source.ts';
import { Agent } from './undici-core.ts';

/**
 * One upstream apiserver: where it is, how to reach it (one undici Agent, so every request of
 * every reflector and of the pass-through shares its connection pool and TLS settings) and the
 * credentials to present.
 */
export interface Upstream {
  /** e.g. `https://10.0.0.1:6443`, no trailing slash (a path prefix of the server URL is kept). */
  readonly baseUrl: string;
  /** The undici dispatcher carrying TLS (CA, client cert/key, skip-verify) for this upstream. */
  readonly dispatcher: Dispatcher;
  /**
   * The `Accept-Encoding` of the reflectors' WATCH requests (`--upstream-watch-encoding`);
   * default `identity`. LISTs and discovery always ask for gzip. A gzipped watch stream is
   * gunzipped off the event loop (node:zlib), which delayed each event by about 1.5 ms on the
   * bench and let RV="" reads miss writes made directly against the apiserver (docs/design.md §2).
   */
  readonly watchEncoding?: 'identity' | 'gzip';
  /**
   * The current `Authorization` header value (`Bearer …`, or `Basic …`), or undefined when the
   * identity is a client certificate (or anonymous). Re-evaluated per call: rotating token
   * files are re-read on change, exec plugins are re-run by client-node when their credential
   * expires. May reject when an exec plugin fails.
   */
  authorization(): Promise<string | undefined>;
  /**
   * A separate connection pool to the same upstream with the same TLS settings (e.g. for
   * long-running pass-through requests, so they never starve short ones of connections).
   * `connections`: max per origin, default 64. `clientCertificate: false` leaves out the
   * kubeconfig's client certificate (same CA and server name): for requests that carry a
   * client's OWN `Authorization`, since the apiserver authenticates a TLS client certificate
   * before any bearer token and would otherwise act with the proxy's identity.
   * `http1Only`: never negotiates HTTP/2 (undici offers h2 by ALPN): for HTTP Upgrade
   * (exec, attach, port-forward), which HTTP/2 cannot carry.
   * Closed by {@link Upstream.close} too.
   */
  createDispatcher(opts?: {
    connections?: number;
    clientCertificate?: boolean;
    http1Only?: boolean;
  }): Dispatcher;
  /** Whether the kubeconfig's identity is (or includes) a TLS client certificate. */
  readonly hasClientCertificate: boolean;
  /** Closes every pooled connection (of every dispatcher it created). */
  close(): Promise<void>;
}

/** Options for {@link createUpstream}. */
export interface UpstreamOptions extends KubeConfigSource {
  /** Already loaded config (tests); otherwise loaded from the source fields. */
  loaded?: LoadedKubeConfig;
  clock?: Clock;
  /** Max connections per origin; default 64 (watches hold one each). */
  connections?: number;
  /**
   * Time to wait for response headers (ms); default 60 000. Bounds a request to a frozen
   * upstream; a LIST's headers come only once the apiserver has built the answer.
   */
  headersTimeoutMs?: number;
  /**
   * The kubeconfig user's `client-certificate` and `client-key` FILES are re-read when they
   * change and at least this often (ms; `--cert-reload-interval`, default 60 000); a new valid
   * pair is used by new connections of every pool that presents it ({@link SwappableDispatcher}).
   */
  certReloadIntervalMs?: number;
  /** Where a reloaded or refused client certificate is logged. */
  log?: Logger;
}

/**
 * Builds the {@link Upstream} from a kubeconfig. TLS material comes from client-node's own
 * resolution (`applyToHTTPSOptions`: CA/cert/key from file or inline data, `insecure-skip-tls-verify`
 * honoured only when the kubeconfig sets it, `tls-server-name`). Throws {@link KubeconfigError}
 * when the kubeconfig has no current cluster, the file system's error when its files cannot be read.
 */
export async function createUpstream(opts: UpstreamOptions = {}): Promise<Upstream> {
  const loaded = opts.loaded ?? loadKubeConfig(opts);
  const clock = opts.clock ?? realClock;
  const { kc } = loaded;
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KubeconfigError('kubeconfig: no current cluster');
  const https: {
    ca?: Buffer;
    cert?: Buffer;
    key?: Buffer;
    rejectUnauthorized?: boolean;
    servername?: string;
    headers?: Record<string, string>;
  } = {};
  const url = new URL(cluster.server);
  // Plain HTTP (e.g. `kubectl proxy` on loopback) has no TLS material to resolve, and
  // client-node refuses http: servers in applyToHTTPSOptions unless TLS checks are disabled.
  if (url.protocol === 'https:') await kc.applyToHTTPSOptions(https as never);
  const connect: Record<string, unknown> = {};
  if (url.protocol === 'https:') {
    if (https.ca) connect.ca = https.ca;
    if (https.cert) connect.cert = https.cert;
    if (https.key) connect.key = https.key;
    if (https.servername) connect.servername = https.servername;
    // Only a kubeconfig saying insecure-skip-tls-verify turns verification off.
    connect.rejectUnauthorized = cluster.skipTLSVerify !== true;
  }
  const pools: Dispatcher[] = [];
  const { cert: _cert, key: _key, ...connectWithoutCert } = connect;
  // A client certificate from files rotates: its pools swap Agents when the files change.
  const user = kc.getCurrentUser();
  const certFiles =
    url.protocol === 'https:' && connect.cert !== undefined && user?.certFile && user.keyFile
      ? [user.certFile, user.keyFile]
      : undefined;
  const rotating: SwappableDispatcher[] = [];
  const reloader = certFiles
    ? new FileReloader({
        what: 'upstream client certificate',
        files: certFiles,
        parse: parseCertKeyPair,
        onReload: (p) => {
          connect.cert = p.cert;
          connect.key = p.key;
          for (const d of rotating) d.swap();
        },
        log: opts.log ?? silentLogger,
        ...(opts.certReloadIntervalMs !== undefined ? { intervalMs: opts.certReloadIntervalMs } : {}),
        clock,
      })
    : undefined;
  reloader?.start();
  const newAgent = (connections: number, clientCertificate = true, http1Only = false): Dispatcher => {
    const make = () =>
      new Agent({
        // A copy: the certificate in use when this Agent was made.
        connect: clientCertificate ? { ...connect } : connectWithoutCert,
        connections,
        ...(http1Only ? { allowH2: false } : {}),
        // Watches are long-lived and may be idle between bookmarks: the reflector has its own
        // liveness window, so undici must not cut idle bodies.
        bodyTimeout: 0,
        headersTimeout: opts.headersTimeoutMs ?? 60_000,
      });
    let a: Dispatcher;
    if (reloader && clientCertificate) {
      const d = new SwappableDispatcher(make);
      rotating.push(d);
      a = d;
    } else {
      a = make();
    }
    pools.push(a);
    return a;
  };
  const dispatcher = newAgent(opts.connections ?? 64);
  const fileToken = loaded.tokenFile ? new FileTokenSource(loaded.tokenFile, clock) : undefined;
  return {
    baseUrl: `${url.origin}${url.pathname.replace(/\/+$/, '')}`,
    dispatcher,
    authorization: () => currentAuthorization(kc, fileToken),
    createDispatcher: (o = {}) =>
      newAgent(o.connections ?? 64, o.clientCertificate ?? true, o.http1Only ?? false),
    hasClientCertificate: connect.cert !== undefined,
    close: async () => {
      reloader?.stop();
      await Promise.all(pools.map((a) => a.close()));
    },
  };
}

async function currentAuthorization(
  kc: KubeConfig,
  fileToken: FileTokenSource | undefined,
): Promise<string | undefined> {
  if (fileToken) {
    const t = fileToken.token();
    if (t) return `Bearer ${t}`;
  }
  const user = kc.getCurrentUser();
  if (!user) return undefined;
  // Static credentials need no call into client-node (which re-reads CA files on each call).
  if (!user.exec && !user.authProvider) {
    if (user.token) return `Bearer ${user.token}`;
    if (user.username)
      return `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
    return undefined;
  }
  const opts: { headers?: Record<string, string>; auth?: string } = {};
  // client-node runs exec plugins (cached until the credential expires) and auth providers.
  await kc.applyToHTTPSOptions(opts as never);
  return opts.headers?.Authorization ?? opts.headers?.authorization;
}
