/**
 * The audit as the settings ask for it (docs/audit.md): the policy of `--audit-policy-file` and
 * the log backend of `--audit-log-*`. As the apiserver (`pkg/server/options/audit.go`
 * `ApplyTo`): without a policy file or without a log path nothing is audited (a warning when only
 * one of them is given); the policy is loaded and validated before the proxy listens.
 */
import { readFileSync } from 'node:fs';
import type { AuditConfig } from '../config/audit-options.ts';
import type { Metrics } from '../ops/metrics.ts';
import { ConfigError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { Auditor } from './auditor.ts';
import { PolicyRuleEvaluator } from './checker.ts';
import { type LineWriter, LogBackend } from './log-backend.ts';
import { type LoadedPolicy, loadPolicy, PolicyError } from './policy.ts';
import { RotatingFile } from './rotating-file.ts';

/**
 * Reads and validates `--audit-policy-file`.
 * @throws ConfigError, one line naming the flag and the file.
 */
export function loadPolicyFile(
  path: string,
  read: (p: string) => string = (p) => readFileSync(p, 'utf8'),
): LoadedPolicy {
  let text: string;
  try {
    text = read(path);
  } catch (err) {
    throw new ConfigError(
      `--audit-policy-file ${path}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  try {
    return loadPolicy(text);
  } catch (err) {
    if (err instanceof PolicyError) throw new ConfigError(`--audit-policy-file ${path}: ${err.message}`);
    throw err;
  }
}

/**
 * The {@link Auditor} of the settings, or undefined when nothing is to be audited.
 * @throws ConfigError: the policy file does not load, or the log file cannot be created.
 */
export function createAuditor(
  config: AuditConfig,
  log: Logger,
  metrics?: Pick<Metrics, 'auditEvents' | 'auditErrors' | 'auditLevels'>,
): Auditor | undefined {
  const policyPath = config.auditPolicyFile;
  const logPath = config.auditLogPath;
  if (policyPath === undefined || logPath === undefined) {
    if (policyPath !== undefined)
      log.warn('--audit-policy-file without --audit-log-path: no audit events are written');
    else if (logPath !== undefined)
      log.warn('--audit-log-path without --audit-policy-file: no audit events are written');
    return undefined;
  }
  const { policy, warnings } = loadPolicyFile(policyPath);
  if (warnings.length > 0)
    log.warn(
      { file: policyPath, warnings },
      'audit policy contains errors, falling back to lenient decoding (the fields named are ignored)',
    );
  let out: LineWriter;
  if (logPath === '-') out = { write: (line) => void process.stdout.write(line) };
  else {
    try {
      out = new RotatingFile({
        path: logPath,
        maxSizeMiB: config.auditLogMaxsize,
        maxBackups: config.auditLogMaxbackup,
        maxAgeDays: config.auditLogMaxage,
        compress: config.auditLogCompress,
      });
    } catch (err) {
      throw new ConfigError(
        `--audit-log-path ${logPath}: cannot open: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  }
  const backend = new LogBackend({
    out,
    format: config.auditLogFormat,
    mode: config.auditLogMode,
    bufferSize: config.auditLogBatchBufferSize,
    log,
    ...(metrics
      ? {
          metrics: {
            event: () => metrics.auditEvents.inc(),
            error: (plugin, n) => metrics.auditErrors.inc({ plugin }, n),
          },
        }
      : {}),
  });
  return new Auditor({
    evaluator: new PolicyRuleEvaluator(policy),
    backend,
    passedUpstream: config.auditPassedUpstream,
    ...(metrics ? { observeLevel: (level) => metrics.auditLevels.inc({ level }) } : {}),
  });
}
