/**
 * The audit log backend (`--audit-log-path`), as the apiserver's k8s.io/apiserver v0.37.2
 * `plugin/pkg/audit/log/backend.go` (one line per event: `json`, the `audit.k8s.io/v1` Event, or
 * `legacy`, `EventString`) wrapped by `--audit-log-mode` (`pkg/server/options/audit.go`
 * `wrapBackend`):
 *
 * - `blocking` (the default): the event is written before the request goes on; a write error is
 *   counted and logged, the request is not affected (`ignoreErrorsBackend`);
 * - `blocking-strict`: the same, but a failure to write the `RequestReceived` stage fails the
 *   request (500, the caller's part);
 * - `batch`: events go to a bounded buffer (`--audit-log-batch-buffer-size`, default 10000, as
 *   `defaultBatchBufferSize`) written soon after, off the request's path; when the buffer is full
 *   the event is dropped, counted and logged ("audit buffer queue blocked",
 *   `plugin/pkg/audit/buffered/buffered.go` `ProcessEvents`), the request is not affected.
 *
 * An error is handled as `audit.HandlePluginError`: `kube_cache_proxy_audit_error_total{plugin}`
 * counts the events lost and one error line lists them in the legacy format (no objects, no
 * credentials).
 */
import type { Logger } from '../util/logger.ts';
import { type AuditEvent, eventJSON, eventString } from './event.ts';

/** `--audit-log-mode`. */
export type AuditLogMode = 'blocking' | 'blocking-strict' | 'batch';
/** `--audit-log-format`. */
export type AuditLogFormat = 'json' | 'legacy';

/** Where lines go: the rotating file, or standard output for `-`. */
export interface LineWriter {
  /** @throws when the line could not be written. */
  write(line: Buffer): void;
  close?(): void;
}

/** Metric hooks (`kube_cache_proxy_audit_event_total`, `…_audit_error_total{plugin}`). */
export interface AuditBackendMetrics {
  event(): void;
  error(plugin: 'log' | 'buffered', events: number): void;
}

/** Options of {@link LogBackend}. */
export interface LogBackendOptions {
  out: LineWriter;
  format: AuditLogFormat;
  mode: AuditLogMode;
  /** `batch` only: events held at most (default 10000). */
  bufferSize?: number;
  log: Logger;
  metrics?: AuditBackendMetrics;
  /** Schedules the batch drain; default `setImmediate`. */
  schedule?: (f: () => void) => void;
}

/** The apiserver's `defaultBatchBufferSize`. */
export const DEFAULT_BATCH_BUFFER_SIZE = 10_000;

/** `audit.Sink` + `audit.Backend` of the log plugin. */
export class LogBackend {
  readonly #o: LogBackendOptions;
  #queue: Buffer[] = [];
  #scheduled = false;
  #closed = false;

  constructor(o: LogBackendOptions) {
    this.#o = o;
  }

  /** The mode (the caller answers 500 on a failed `RequestReceived` only in `blocking-strict`). */
  get mode(): AuditLogMode {
    return this.#o.mode;
  }

  /**
   * `ProcessEvents` of one event at its current stage: serialised now (the caller reuses the
   * event for later stages). False only in `blocking-strict` when the line could not be written.
   */
  processEvent(ev: AuditEvent): boolean {
    const o = this.#o;
    o.metrics?.event();
    const line = Buffer.from(o.format === 'legacy' ? `${eventString(ev)}\n` : eventJSON(ev));
    if (o.mode !== 'batch') {
      const ok = this.#write(line, ev);
      return o.mode === 'blocking-strict' ? ok : true;
    }
    const max = o.bufferSize ?? DEFAULT_BATCH_BUFFER_SIZE;
    if (this.#closed || this.#queue.length >= max) {
      this.#pluginError('buffered', this.#closed ? 'audit backend shut down' : 'audit buffer queue blocked', [
        eventString(ev),
      ]);
      return true;
    }
    this.#queue.push(line);
    if (!this.#scheduled) {
      this.#scheduled = true;
      (o.schedule ?? setImmediate)(() => this.#drain());
    }
    return true;
  }

  /** Events waiting in the batch buffer. */
  get buffered(): number {
    return this.#queue.length;
  }

  /** Writes what the batch buffer holds, then closes the output (idempotent). */
  shutdown(): void {
    if (this.#closed) return;
    this.#drain();
    this.#closed = true;
    try {
      this.#o.out.close?.();
    } catch {}
  }

  #drain(): void {
    this.#scheduled = false;
    const q = this.#queue;
    this.#queue = [];
    for (const line of q) this.#write(line, undefined);
  }

  #write(line: Buffer, ev: AuditEvent | undefined): boolean {
    try {
      this.#o.out.write(line);
      return true;
    } catch (err) {
      this.#pluginError('log', (err as Error).message, [ev ? eventString(ev) : summary(line)]);
      return false;
    }
  }

  /** `audit.HandlePluginError`. */
  #pluginError(plugin: 'log' | 'buffered', message: string, impacted: string[]): void {
    this.#o.metrics?.error(plugin, impacted.length);
    this.#o.log.error(
      { plugin, events: impacted.length, impacted },
      `Error in audit plugin '${plugin}' affecting ${impacted.length} audit events: ${message}`,
    );
  }
}

/**
 * The legacy line of a buffered event that could not be written, from its JSON line (only on
 * that error path: no legacy line is kept for every buffered event).
 */
function summary(line: Buffer): string {
  const text = line.toString();
  try {
    const e = JSON.parse(text) as Partial<Record<keyof AuditEvent, unknown>>;
    return eventString({
      ...(e as unknown as AuditEvent),
      user: (e.user ?? {}) as AuditEvent['user'],
      sourceIPs: (e.sourceIPs ?? []) as string[],
      userAgent: String(e.userAgent ?? ''),
      requestReceivedTimestamp: Date.parse(String(e.requestReceivedTimestamp)) * 1000 || 0,
    });
  } catch {
    // The legacy format's own line.
    return text.trimEnd();
  }
}
