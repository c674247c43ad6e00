/**
 * The process logger: pino JSON lines with credentials redacted.
 * Exports {@link createLogger}, its options, {@link REDACT_PATHS} (headers, token fields,
 * kubeconfig user objects) and {@link silentLogger} for tests, plus pino's `Logger` type.
 */
import { type Logger, pino, stdSerializers } from 'pino';

/**
 * Paths pino redacts everywhere: credentials must never reach logs (docs/design.md §4). Covers
 * request headers as logged by fastify and kubeconfig-shaped objects.
 */
export const REDACT_PATHS = [
  // HTTP headers, as fastify and undici objects carry them.
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'headers.authorization',
  'headers.Authorization',
  'headers.cookie',
  '*.headers.authorization',
  '*.headers.Authorization',
  'authorization',
  'Authorization',
  // Credentials by name, at the top level or one level down.
  'token',
  '*.token',
  'bearerToken',
  '*.bearerToken',
  'password',
  '*.password',
  'keyData',
  '*.keyData',
  'key',
  '*.key',
  // Kubeconfig-shaped objects (`users[].user`), as YAML/JSON keys and client-node's field names.
  'client-key-data',
  '*["client-key-data"]',
  'users[*].user.token',
  'users[*].user.password',
  'users[*].user["client-key-data"]',
  'user.token',
  'user.password',
  'user["client-key-data"]',
  'user.keyData',
];

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** pino level: trace | debug | info | warn | error | fatal | silent. Default `info`. */
  level?: string;
  /** Destination stream; default stdout. Tests pass a capture stream. */
  destination?: NodeJS.WritableStream;
}

/** Creates the process logger: pino JSON lines to stdout with credentials redacted. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      base: { app: 'kube-cache-proxy' },
      // An error's own message, its cause beside it (`err.cause`): pino's default joins every
      // cause's message onto `err.message`, which repeated ours, which already name their cause
      // ("discovery of /api failed: connect ECONNREFUSED …" three times over).
      serializers: { err: stdSerializers.errWithCause },
    },
    opts.destination ?? process.stdout,
  );
}

/** A logger that discards everything (unit tests). */
export const silentLogger: Logger = pino({ level: 'silent' });

export type { Logger };
