/**
 * The audit's counters (docs/audit.md), named after the apiserver's `apiserver_audit_event_total`,
 * `apiserver_audit_error_total{plugin}` and `apiserver_audit_level_total{level}`
 * (k8s.io/apiserver `pkg/audit/metrics.go`). Every label is from a closed list.
 */
import { Counter, type Registry } from 'prom-client';

/** The audit part of `Metrics`. */
export interface AuditMetrics {
  /** `kube_cache_proxy_audit_event_total`: audit events (one per stage) handed to the backend. */
  readonly auditEvents: Counter;
  /** `kube_cache_proxy_audit_error_total{plugin}`: audit events lost, `log` (a write failed) | `buffered` (batch buffer full). */
  readonly auditErrors: Counter<'plugin'>;
  /** `kube_cache_proxy_audit_level_total{level}`: requests the policy was evaluated for, by level (None|Metadata|Request|RequestResponse). */
  readonly auditLevels: Counter<'level'>;
}

/** Registers the audit counters on `registry` with names prefixed by `prefix`. */
export function createAuditMetrics(registry: Registry, prefix: string): AuditMetrics {
  const registers = [registry];
  return {
    auditEvents: new Counter({
      name: `${prefix}audit_event_total`,
      help: 'Audit events (one per stage) of requests the proxy answered, handed to the audit backend.',
      registers,
    }),
    auditErrors: new Counter({
      name: `${prefix}audit_error_total`,
      help: 'Audit events lost, by plugin: log (the write failed) or buffered (--audit-log-mode=batch buffer full).',
      labelNames: ['plugin'],
      registers,
    }),
    auditLevels: new Counter({
      name: `${prefix}audit_level_total`,
      help: 'Requests the audit policy was evaluated for, by the level it gave (None|Metadata|Request|RequestResponse).',
      labelNames: ['level'],
      registers,
    }),
  };
}
