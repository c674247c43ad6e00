/** A pino logger whose JSON lines a unit test reads back (what a handler logged, and how). */
import { Writable } from 'node:stream';
import { type Logger, pino } from 'pino';

/**
 * A logger at `level` (default `info`) and the lines it has written so far, each parsed
 * (`msg`, `level` as pino's number, `err` as pino's error serializer writes it: `type`,
 * `message`, `stack`).
 */
export function logLines(level = 'info'): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    }),
  );
  return { logger, lines };
}
