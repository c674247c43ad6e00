/**
 * The main listener's TLS files kept current: `--tls-cert-file` + `--tls-private-key-file` and
 * `--client-ca-file`, each behind a {@link FileReloader} (the apiserver's dynamic certificate
 * controllers, `k8s.io/apiserver/pkg/server/dynamiccertificates`), handed to the server's
 * `setTls` (Node's `setSecureContext`) as they change.
 */
import type { Config } from '../config/config.ts';
import type { Metrics } from '../ops/metrics.ts';
import { FileReloader } from '../util/file-reloader.ts';
import type { Logger } from '../util/logger.ts';
import { type CertKeyPair, parseCaBundle, parseCertKeyPair } from '../util/tls-files.ts';
import type { KubeServer } from './app.ts';

/** The TLS material in use and the reloaders' lifecycle. */
export interface ServingTlsFiles {
  /** What new connections get now (PEM as read). */
  current(): { cert: Buffer; key: Buffer; ca?: Buffer };
  /** Starts watching the files (once the server exists). */
  start(): void;
  stop(): void;
}

/**
 * The main listener's TLS files (`--tls-cert-file` + `--tls-private-key-file`, `--client-ca-file`),
 * each behind a {@link FileReloader}: read and checked now (a malformed file fails the start),
 * re-read when they change and every `--cert-reload-interval`; a new pair or CA bundle that
 * checks out goes to the server for new connections, and the serving certificate's expiry to
 * `kube_cache_proxy_serving_certificate_expiry_timestamp_seconds`. Undefined without TLS.
 * @throws Error naming the file when one cannot be read or is malformed.
 */
export function servingTlsFiles(
  config: Config,
  logger: Logger,
  metrics: Metrics,
  server: () => Pick<KubeServer, 'setTls'>,
): ServingTlsFiles | undefined {
  if (config.tlsCertFile === undefined || config.tlsPrivateKeyFile === undefined) return undefined;
  const log = logger.child({ component: 'certificates' });
  const common = { log, intervalMs: config.certReloadInterval };
  const current = () => ({
    cert: pair.value.cert,
    key: pair.value.key,
    ...(ca ? { ca: ca.value } : {}),
  });
  const pair = new FileReloader<CertKeyPair>({
    ...common,
    what: 'serving certificate',
    files: [config.tlsCertFile, config.tlsPrivateKeyFile],
    parse: parseCertKeyPair,
    onReload: (p) => {
      metrics.servingCertificateExpiry.set(p.notAfterMs / 1000);
      server().setTls(current());
    },
  });
  const ca =
    config.clientCaFile !== undefined
      ? new FileReloader<Buffer>({
          ...common,
          what: 'client CA',
          files: [config.clientCaFile],
          parse: parseCaBundle,
          onReload: () => server().setTls(current()),
        })
      : undefined;
  metrics.registry.registerMetric(metrics.servingCertificateExpiry);
  metrics.servingCertificateExpiry.set(pair.value.notAfterMs / 1000);
  return {
    current,
    start() {
      pair.start();
      ca?.start();
    },
    stop() {
      pair.stop();
      ca?.stop();
    },
  };
}
