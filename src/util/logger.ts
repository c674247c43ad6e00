import { type Logger, pino } from 'pino';

/**
 * Paths pino redacts everywhere: credentials must never reach logs (DESIGN.md §4). Covers
 * request headers as logged by fastify and kubeconfig-shaped objects.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'token',
  '*.token',
  'bearerToken',
  '*.bearerToken',
  'password',
  '*.password',
  'keyData',
  '*.keyData',
  'client-key-data',
  '*["client-key-data"]',
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
    },
    opts.destination ?? process.stdout,
  );
}

/** A logger that discards everything (unit tests). */
export const silentLogger: Logger = pino({ level: 'silent' });

export type { Logger };
