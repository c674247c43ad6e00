/**
 * The audit settings (docs/audit.md), declared as the rest of the schema (`config.ts` `OPTIONS`
 * takes them as they are), with the apiserver's flag names, defaults and meanings
 * (k8s.io/apiserver `pkg/server/options/audit.go`): `--audit-policy-file`, `--audit-log-path`
 * (`-` standard output), `--audit-log-maxage`, `-maxbackup`, `-maxsize` (0: no limit, no
 * rotation), `-format`, `-mode`, `-batch-buffer-size`, `-compress`; and the proxy's own
 * `--audit-passed-upstream`.
 */

/** The audit part of `Config`. */
export interface AuditConfig {
  /** `--audit-policy-file`: an `audit.k8s.io/v1` Policy; without it nothing is audited. */
  auditPolicyFile?: string;
  /** `--audit-log-path`: the log file, `-` for standard output; without it nothing is audited. */
  auditLogPath?: string;
  /** Days a rotated file is kept (by the time in its name); 0: no limit. */
  auditLogMaxage: number;
  /** Rotated files kept; 0: no limit. */
  auditLogMaxbackup: number;
  /** MiB after which the file is rotated; 0: never rotated. */
  auditLogMaxsize: number;
  auditLogFormat: 'json' | 'legacy';
  auditLogMode: 'blocking' | 'blocking-strict' | 'batch';
  /** Events the `batch` mode holds before it drops new ones. */
  auditLogBatchBufferSize: number;
  /** Rotated files are gzip-compressed. */
  auditLogCompress: boolean;
  /** Also audit requests passed to the apiserver (which audits them itself), marked as such. */
  auditPassedUpstream: boolean;
}

/** The audit settings of the schema (same shape as `config.ts` `OptionSpec`). */
export const AUDIT_OPTIONS = [
  {
    key: 'auditPolicyFile',
    flag: 'audit-policy-file',
    env: 'KCP_AUDIT_POLICY_FILE',
    kind: 'string',
    description:
      "Path to an audit.k8s.io/v1 Policy file (YAML or JSON, the apiserver's format) deciding which requests the proxy answers itself are audited and at which level (docs/audit.md). With --audit-log-path; without either nothing is audited.",
  },
  {
    key: 'auditLogPath',
    flag: 'audit-log-path',
    env: 'KCP_AUDIT_LOG_PATH',
    kind: 'string',
    description:
      'Audit log file: one audit.k8s.io/v1 Event per line for the requests the proxy answers itself (created 0600, parents 0700). "-" means standard output (mixed with the JSON log lines there; audit lines have "kind":"Event").',
  },
  {
    key: 'auditLogMaxage',
    flag: 'audit-log-maxage',
    env: 'KCP_AUDIT_LOG_MAXAGE',
    kind: 'count',
    default: 0,
    description:
      'Days to keep rotated audit log files, by the timestamp in their name. 0: not removed by age.',
  },
  {
    key: 'auditLogMaxbackup',
    flag: 'audit-log-maxbackup',
    env: 'KCP_AUDIT_LOG_MAXBACKUP',
    kind: 'count',
    default: 0,
    description: 'Rotated audit log files to keep. 0: no limit.',
  },
  {
    key: 'auditLogMaxsize',
    flag: 'audit-log-maxsize',
    env: 'KCP_AUDIT_LOG_MAXSIZE',
    kind: 'count',
    default: 0,
    description:
      "MiB after which the audit log file is rotated (renamed <name>-<UTC time><ext>, as the apiserver's lumberjack). 0: never rotated.",
  },
  {
    key: 'auditLogFormat',
    flag: 'audit-log-format',
    env: 'KCP_AUDIT_LOG_FORMAT',
    kind: 'enum',
    values: ['json', 'legacy'],
    default: 'json',
    description:
      '"json": one audit.k8s.io/v1 Event per line; "legacy": the apiserver\'s one-line text (time AUDIT: id=… stage=… user=… uri=… response=…).',
  },
  {
    key: 'auditLogMode',
    flag: 'audit-log-mode',
    env: 'KCP_AUDIT_LOG_MODE',
    kind: 'enum',
    values: ['blocking', 'blocking-strict', 'batch'],
    default: 'blocking',
    description:
      '"blocking": each event is written before the request goes on (a write error is logged and counted); "blocking-strict": the same, and a request whose RequestReceived event cannot be written fails with 500; "batch": events are buffered (--audit-log-batch-buffer-size) and written off the request\'s path, new ones dropped (logged, counted) while the buffer is full.',
  },
  {
    key: 'auditLogBatchBufferSize',
    flag: 'audit-log-batch-buffer-size',
    env: 'KCP_AUDIT_LOG_BATCH_BUFFER_SIZE',
    kind: 'int',
    default: 10000,
    description: 'Events --audit-log-mode=batch buffers before it drops new ones.',
  },
  {
    key: 'auditLogCompress',
    flag: 'audit-log-compress',
    env: 'KCP_AUDIT_LOG_COMPRESS',
    kind: 'bool',
    default: false,
    description: 'Rotated audit log files are gzip-compressed (<name>-<time><ext>.gz).',
  },
  {
    key: 'auditPassedUpstream',
    flag: 'audit-passed-upstream',
    env: 'KCP_AUDIT_PASSED_UPSTREAM',
    kind: 'bool',
    default: false,
    description:
      'Also audit the requests passed to the apiserver (which audits them itself), at Metadata level at most, annotated kube-cache-proxy.io/passed-upstream with the reason (docs/delegation.md).',
  },
] as const satisfies readonly {
  key: keyof AuditConfig;
  flag: string;
  env: string;
  kind: string;
  values?: readonly string[];
  default?: unknown;
  description: string;
}[];
