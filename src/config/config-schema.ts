/**
 * The configuration schema of kube-cache-proxy: the validated {@link Config} and the settings
 * table ({@link OPTIONS}): each setting's flag, environment
 * variable, YAML key, kind, default and description, declared once. `config.ts` reads flags,
 * environment and file through it and renders `--help` and docs/configuration.md from it.
 */
import type { ResourceSpec } from '../apimachinery/resource-scope.ts';
import { AUDIT_OPTIONS, type AuditConfig } from './audit-options.ts';
import type { ValueSpec } from './config-values.ts';
import { FILTER_OPTIONS } from './kubectl-proxy-filter.ts';
import type { ListenAddress } from './listen-address.ts';
import { WATCH_ENCODING_OPTIONS } from './upstream-watch-encoding.ts';

/** The validated configuration. */
export interface Config extends AuditConfig {
  /** Path of the kubeconfig; undefined = in-cluster configuration. */
  kubeconfig?: string;
  /**
   * Resources to cache, as `resource[.group]` (`pods`, `deployments.apps`), each optionally
   * scoped by the selectors its reflector lists and watches with (`apimachinery/resource-scope.ts`).
   */
  resources: ResourceSpec[];
  /**
   * `auto` among `--resources` (the default when `--resources` is not given): a LIST or WATCH of
   * a resource that is not cached starts a cache for it (`src/on-demand/caches.ts`).
   */
  auto: boolean;
  /** Resources (`resource[.group]`) never cached on demand (`--auto-exclude`). */
  autoExclude: string[];
  /** An on-demand cache no client used for this long (ms) is stopped (`--auto-idle-timeout`). */
  autoIdleTimeout: number;
  /** At most this many on-demand caches at once (`--auto-max-resources`). */
  autoMaxResources: number;
  /** Cached bytes (objects, all caches) past which no new on-demand cache starts without evicting one (`--auto-max-bytes`). */
  autoMaxBytes: number;
  /** Restrict every reflector to one namespace (namespace-scoped RBAC). */
  namespace?: string;
  listen: ListenAddress;
  opsListen: ListenAddress;
  consistentReads: 'cache' | 'proven' | 'upstream';
  /** `gzip`: cache answers above 128 KiB gzip-compressed for clients whose Accept-Encoding has gzip. */
  responseCompression: 'none' | 'gzip';
  /** `cache` (default): protobuf answers from the cache for clients whose Accept picks protobuf; `json`: not. */
  protobufAnswers: 'cache' | 'json';
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
  /** Cap on concurrent short requests (429 past it). */
  maxInflight: number;
  /** Cap on concurrent watches and other long-running requests (429 past it). */
  maxWatchers: number;
  /** Cap on watchers parked at once, over all caches (`--max-parked-watchers`); 0: close instead of parking. */
  maxParkedWatchers: number;
  /** PEM serving certificate and key of the main listener (TLS when both are set). */
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** PEM CA bundle that verifies x509 client certificates (user = CN, groups = O). */
  clientCaFile?: string;
  /** Authenticated mode: TokenReview / client CA authentication, SubjectAccessReview of every cached read. */
  delegatedAuth: boolean;
  /** TokenReview answer cache TTL (ms), success and failure. */
  authenticationTokenWebhookCacheTtl: number;
  /** SubjectAccessReview "allowed" cache TTL (ms). */
  authorizationWebhookCacheAuthorizedTtl: number;
  /** SubjectAccessReview "denied" cache TTL (ms). */
  authorizationWebhookCacheUnauthorizedTtl: number;
  /** How long after its TTL an allowed TokenReview/SubjectAccessReview answer may be reused while reviews fail (ms; 0: never). */
  authorizationOutageGrace: number;
  /** Forward x509 clients' pass-through requests with impersonation headers by the proxy's identity. */
  impersonateCertificateClients: boolean;
  /** Regexps (source text) a request's Host (port stripped) must match, without authentication. */
  acceptHosts: string[];
  /** The pod runs with hostNetwork (flag, or env POD_IP equal to HOST_IP). */
  hostNetwork: boolean;
  /** How often the upstream check runs while it passes (ms, `--upstream-check-interval`). */
  upstreamCheckInterval: number;
  /** A watch stream silent this long (ms) is presumed half-open (`--watch-liveness-window`). */
  watchLivenessWindow: number;
  /** How often certificate and key files are re-read besides file-change events (ms, `--cert-reload-interval`). */
  certReloadInterval: number;
  /** Directory of the cached resources' snapshots (`--snapshot-dir`); undefined: memory only. */
  snapshotDir?: string;
  /** ms between two snapshots of a resource (`--snapshot-interval`). */
  snapshotInterval: number;
  /** `secrets` are snapshotted too (`--snapshot-secrets`). */
  snapshotSecrets: boolean;
  upstreamWatchEncoding: 'identity' | 'gzip';
  /** Regexps (source text) one of which a request's decoded path must match (`auth/request-filter.ts`). */
  acceptPaths: string[];
  /**
   * Regexps (source text) of paths refused even when accepted. Without the flag: kubectl proxy's
   * exec and attach without `--delegated-auth`, none with it (`rejectPathsDefault` of `kubectl-proxy-filter.ts`).
   */
  rejectPaths: string[];
  /** Regexps (source text) of HTTP methods refused. */
  rejectMethods: string[];
}

/** How a setting's raw value is converted (`config-values.ts`). */
export type Kind = ValueSpec['kind'];

/** One setting of the schema. */
export interface OptionSpec {
  key: keyof Config;
  flag: string;
  env: string;
  kind: Kind;
  values?: readonly string[];
  /** A `duration`'s smallest allowed value (Go duration). */
  atLeast?: string;
  /** An `int` that may be 0. */
  zero?: boolean;
  default?: unknown;
  description: string;
}

/** The schema: single source of truth for flags, env vars, file keys and docs. */
export const OPTIONS: readonly OptionSpec[] = [
  {
    key: 'kubeconfig',
    flag: 'kubeconfig',
    env: 'KCP_KUBECONFIG',
    kind: 'string',
    description: 'Path of the kubeconfig used to reach the apiserver. Default: in-cluster configuration.',
  },
  {
    key: 'resources',
    flag: 'resources',
    env: 'KCP_RESOURCES',
    kind: 'resources',
    default: 'auto',
    description:
      'Comma-separated resources to cache, as resource[.group] (e.g. pods,configmaps,deployments.apps), each optionally scoped: pods[fieldSelector=spec.nodeName=$(NODE_NAME)] caches only what that selector selects ($(VAR) from the environment, $$ a literal $; see docs/configuration.md "Scoped caches"). The entry auto (alone or with others) caches on demand every resource a client lists or watches (see docs/configuration.md "Caches on demand").',
  },
  {
    key: 'autoExclude',
    flag: 'auto-exclude',
    env: 'KCP_AUTO_EXCLUDE',
    kind: 'names',
    default: ['secrets'],
    description:
      'Comma-separated resources (resource[.group], no version: deployments.apps, not deployments or deployments.v1) that --resources=auto never caches; their requests always pass upstream. The list replaces the default secrets: name it again to keep Secrets out of memory (a warning is logged at start when it is missing, and once for an entry that names a requested resource without its group). Empty: none excluded.',
  },
  {
    key: 'autoIdleTimeout',
    flag: 'auto-idle-timeout',
    env: 'KCP_AUTO_IDLE_TIMEOUT',
    kind: 'duration',
    default: '10m',
    atLeast: '1s',
    description:
      'An on-demand cache that served no request and had no open watch for this long is stopped and its memory freed (Go duration, at least 1s). Only requests the cache serves or could serve count (not a kubectl get Table of a kind the cache does not print, nor another namespace than the one it holds).',
  },
  {
    key: 'autoMaxResources',
    flag: 'auto-max-resources',
    env: 'KCP_AUTO_MAX_RESOURCES',
    kind: 'int',
    // kube-controller-manager (every default controller) and kube-scheduler list and watch 62
    // resources; 100 idle on-demand caches of empty resources took 5.7 MiB of live heap and
    // 5.5–25.8 MiB of RSS (bench/tools/idle-caches-rss.ts, docs/benchmarks.md), so the cap is
    // about upstream watches and data, not idle caches.
    default: 100,
    description:
      'At most this many on-demand caches at once (the default covers the 62 resources kube-controller-manager and kube-scheduler watch, with room for custom resources their garbage collector and quota controller also watch); one more evicts the least recently used idle one first (synced and unused for at least 1m, or --auto-idle-timeout if shorter), else it is not started (logged, its requests pass upstream).',
  },
  {
    key: 'autoMaxBytes',
    flag: 'auto-max-bytes',
    env: 'KCP_AUTO_MAX_BYTES',
    kind: 'int',
    default: 1073741824,
    description:
      'Bytes of cached objects (all caches) above which a new on-demand cache first evicts least recently used idle on-demand caches, else is not started. Checked only when a cache starts: not a memory bound, a started cache grows with its resource.',
  },
  {
    key: 'namespace',
    flag: 'namespace',
    env: 'KCP_NAMESPACE',
    kind: 'string',
    description: 'Cache only this namespace (for namespace-scoped RBAC); other requests pass upstream.',
  },
  {
    key: 'listen',
    flag: 'listen',
    env: 'KCP_LISTEN',
    kind: 'address',
    default: '127.0.0.1:8001',
    description:
      'HOST:PORT of the Kubernetes API listener. A non-loopback address requires --tls-cert-file, --tls-private-key-file and --delegated-auth.',
  },
  {
    key: 'opsListen',
    flag: 'ops-listen',
    env: 'KCP_OPS_LISTEN',
    kind: 'address',
    default: '127.0.0.1:8081',
    description: 'HOST:PORT of the operations listener (/metrics, /healthz, /readyz, /livez).',
  },
  {
    key: 'consistentReads',
    flag: 'consistent-reads',
    env: 'KCP_CONSISTENT_READS',
    kind: 'enum',
    values: ['cache', 'proven', 'upstream'],
    default: 'cache',
    description:
      'resourceVersion="" reads: "cache" serves them while the upstream watch is proven live and has reached every write made through the proxy (a write made directly against the apiserver may not be visible yet); "proven" also asks the apiserver its current revision first (one LIST of one item, shared by concurrent reads) and serves once the cache reached it or the apiserver showed no event of the resource up to it, so every write completed before the read is visible, as with the apiserver; "upstream" always forwards them.',
  },
  ...WATCH_ENCODING_OPTIONS,
  {
    key: 'responseCompression',
    flag: 'response-compression',
    env: 'KCP_RESPONSE_COMPRESSION',
    kind: 'enum',
    values: ['none', 'gzip'],
    default: 'none',
    description:
      'LIST and GET answers served from the cache: "gzip" compresses those above 128 KiB for clients whose Accept-Encoding has gzip, as the apiserver does (one gzip member, level 1); "none" answers identity (the right trade on loopback, see docs/benchmarks.md).',
  },
  {
    key: 'protobufAnswers',
    flag: 'protobuf-answers',
    env: 'KCP_PROTOBUF_ANSWERS',
    kind: 'enum',
    values: ['cache', 'json'],
    default: 'cache',
    description:
      'Clients whose Accept the apiserver would answer in protobuf (client-go protobuf configs, the metadata client, kube components): "cache" answers them protobuf from the cache, byte for byte the apiserver\'s (each object\'s protobuf is encoded once, on its first protobuf read, and kept with the object until it changes, its long strings shared with the cached JSON and its common runs with the first object of its type: live memory of about 0.15 (pods with large annotations) to 0.25 (plain pods) of the JSON bytes of the objects protobuf clients read, see docs/benchmarks.md; objects the encoder cannot write exactly go upstream, reason protobuf-inexact); "json" answers them the JSON they also accept and keeps no protobuf bytes (their decoding then costs those clients ~5x the CPU), and passes protobuf-only requests upstream (reason protobuf-off).',
  },
  {
    key: 'logLevel',
    flag: 'log-level',
    env: 'KCP_LOG_LEVEL',
    kind: 'enum',
    values: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'],
    default: 'info',
    description: 'pino log level.',
  },
  {
    key: 'maxInflight',
    flag: 'max-inflight',
    env: 'KCP_MAX_INFLIGHT',
    kind: 'int',
    default: 400,
    description:
      'Maximum concurrent short requests, counted separately for cache-served and passed-upstream ones (so a stuck apiserver cannot block cached reads); more get 429 with Retry-After.',
  },
  {
    key: 'maxWatchers',
    flag: 'max-watchers',
    env: 'KCP_MAX_WATCHERS',
    kind: 'int',
    default: 1000,
    description: 'Maximum concurrent watches and other long-running requests; more get 429 with Retry-After.',
  },
  {
    key: 'maxParkedWatchers',
    flag: 'max-parked-watchers',
    env: 'KCP_MAX_PARKED_WATCHERS',
    kind: 'count',
    default: 1000,
    description:
      'Maximum watchers parked at once, over all cached resources. A watch whose client stops reading (1,000 events or 16 MiB queued) is parked: its queue is released and, when the client reads again, it resumes from the history window with every event once, as the apiserver with WatchCacheStallResume; it ends with a 410 ERROR event only when its resourceVersion left the window. Past this bound the watcher parked the longest is closed. 0: a watch whose queue is full is closed (its client resumes by resourceVersion, or gets 410 and relists).',
  },
  {
    key: 'tlsCertFile',
    flag: 'tls-cert-file',
    env: 'KCP_TLS_CERT_FILE',
    kind: 'string',
    description:
      'PEM serving certificate (chain) of the main listener; with --tls-private-key-file it serves HTTPS.',
  },
  {
    key: 'tlsPrivateKeyFile',
    flag: 'tls-private-key-file',
    env: 'KCP_TLS_PRIVATE_KEY_FILE',
    kind: 'string',
    description: 'PEM private key of --tls-cert-file.',
  },
  {
    key: 'clientCaFile',
    flag: 'client-ca-file',
    env: 'KCP_CLIENT_CA_FILE',
    kind: 'string',
    description:
      'PEM CA bundle verifying client certificates on the TLS listener: user = CN, groups = O plus system:authenticated (as the apiserver).',
  },
  {
    key: 'delegatedAuth',
    flag: 'delegated-auth',
    env: 'KCP_DELEGATED_AUTH',
    kind: 'bool',
    default: false,
    description:
      "Authenticated mode: bearer tokens checked by TokenReview, client certificates by --client-ca-file, every cached read authorized by SubjectAccessReview; requests without credentials go upstream without the proxy's. Requires the TLS flags.",
  },
  {
    key: 'authenticationTokenWebhookCacheTtl',
    flag: 'authentication-token-webhook-cache-ttl',
    env: 'KCP_AUTHENTICATION_TOKEN_WEBHOOK_CACHE_TTL',
    kind: 'duration',
    default: '10s',
    description: 'How long TokenReview answers (authenticated or not) are cached (Go duration).',
  },
  {
    key: 'authorizationWebhookCacheAuthorizedTtl',
    flag: 'authorization-webhook-cache-authorized-ttl',
    env: 'KCP_AUTHORIZATION_WEBHOOK_CACHE_AUTHORIZED_TTL',
    kind: 'duration',
    default: '10s',
    description:
      'How long an allowed SubjectAccessReview is cached: a revoked RoleBinding stops cached reads within this time.',
  },
  {
    key: 'authorizationWebhookCacheUnauthorizedTtl',
    flag: 'authorization-webhook-cache-unauthorized-ttl',
    env: 'KCP_AUTHORIZATION_WEBHOOK_CACHE_UNAUTHORIZED_TTL',
    kind: 'duration',
    default: '10s',
    description: 'How long a denied SubjectAccessReview is cached (Go duration).',
  },
  {
    key: 'authorizationOutageGrace',
    flag: 'authorization-outage-grace',
    env: 'KCP_AUTHORIZATION_OUTAGE_GRACE',
    kind: 'duration',
    default: '0s',
    description:
      'With --delegated-auth: while TokenReview or SubjectAccessReview requests get no answer (connection refused, timeout, 5xx), an allowed answer may be reused for at most this long after its cache TTL, so cached reads outlive an apiserver outage. A denial is never extended and a token never seen is never admitted; a revoked RoleBinding may then take TTL + grace to stop cached reads. 0: a failed review fails the request (401, or upstream for authorization).',
  },
  {
    key: 'impersonateCertificateClients',
    flag: 'impersonate-certificate-clients',
    env: 'KCP_IMPERSONATE_CERTIFICATE_CLIENTS',
    kind: 'bool',
    default: false,
    description:
      'Forward requests of client-certificate users upstream as the proxy with Impersonate-User/Impersonate-Group (needs the impersonation RBAC of deploy/overlays); without it they get 403.',
  },
  {
    key: 'acceptHosts',
    flag: 'accept-hosts',
    env: 'KCP_ACCEPT_HOSTS',
    kind: 'regexps',
    default: ['^localhost$', '^127\\.0\\.0\\.1$', '^\\[::1\\]$'],
    description:
      "Comma-separated regexps one of which the Host header (port stripped) must match, in the modes without --delegated-auth (kubectl proxy's flag and default); others get 403.",
  },
  {
    key: 'hostNetwork',
    flag: 'host-network',
    env: 'KCP_HOST_NETWORK',
    kind: 'bool',
    default: false,
    description:
      'The pod runs with hostNetwork (also detected when POD_IP and HOST_IP are set and equal): its loopback is shared, so --delegated-auth and TLS are required.',
  },
  ...AUDIT_OPTIONS,
  {
    key: 'upstreamCheckInterval',
    flag: 'upstream-check-interval',
    env: 'KCP_UPSTREAM_CHECK_INTERVAL',
    kind: 'duration',
    default: '1m',
    atLeast: '1s',
    description:
      'How often the upstream check (GET /version with the proxy\'s credentials; a SelfSubjectReview too at start and after a failure) runs while it passes; while it fails, again after 1s doubling to 30s. Its last result is the /readyz check "upstream" (Go duration, at least 1s).',
  },
  {
    key: 'watchLivenessWindow',
    flag: 'watch-liveness-window',
    env: 'KCP_WATCH_LIVENESS_WINDOW',
    kind: 'duration',
    default: '3m',
    atLeast: '1s',
    description:
      "An upstream watch stream with no event or bookmark for this long is no longer proven live (consistent reads go upstream) and, if its resource sends periodic bookmarks (served from the apiserver's watch cache), is presumed half-open and restarted; a resource without them (events by default) keeps its stream until the stream's own timeout (Go duration, at least 1s).",
  },
  {
    key: 'certReloadInterval',
    flag: 'cert-reload-interval',
    env: 'KCP_CERT_RELOAD_INTERVAL',
    kind: 'duration',
    default: '1m',
    atLeast: '1s',
    description:
      "Certificate and key files (--tls-cert-file, --tls-private-key-file, --client-ca-file, the kubeconfig's client-certificate and client-key files) are re-read when they change and at least this often, as the apiserver's dynamic certificate controllers do (Go duration, at least 1s).",
  },
  {
    key: 'snapshotDir',
    flag: 'snapshot-dir',
    env: 'KCP_SNAPSHOT_DIR',
    kind: 'string',
    description:
      'Directory where each configured resource\'s cache is saved (those named in --resources; on-demand caches of --resources=auto are not) (objects, list resourceVersion, history window, apiserver identity; mode 0600 files in a 0700 directory of the proxy\'s user) after its first sync, every --snapshot-interval and at shutdown. A restarted proxy serves the saved cache (resourceVersion="0" reads and watches; consistent and Exact reads go upstream until the upstream accepts a watch from its resourceVersion) and resumes its upstream watch from it instead of listing. Default: memory only.',
  },
  {
    key: 'snapshotInterval',
    flag: 'snapshot-interval',
    env: 'KCP_SNAPSHOT_INTERVAL',
    kind: 'duration',
    default: '1m',
    atLeast: '1s',
    description:
      'How often each resource is saved to --snapshot-dir when it changed (Go duration, at least 1s); also after its first sync and at shutdown.',
  },
  {
    key: 'snapshotSecrets',
    flag: 'snapshot-secrets',
    env: 'KCP_SNAPSHOT_SECRETS',
    kind: 'bool',
    default: false,
    description: 'Save secrets to --snapshot-dir too (never without it: a snapshot is a file on the node).',
  },
  ...FILTER_OPTIONS,
];
