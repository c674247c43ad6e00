/**
 * The product's logger (src/util/logger.ts `createLogger`: its redaction and base fields) writing
 * to memory, so a unit test reads back what a component logged, and how.
 */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/util/logger.ts';

/**
 * A logger at `level` (default `info`), the lines it has written so far, each parsed (`msg`,
 * `level` as pino's number: 30 info, 40 warn, 50 error; `err` as pino's error serializer writes
 * it: `type`, `message`, `stack`), and `text()`, everything written as it was written (for
 * checks that a secret never reaches the output in any form).
 */
export function logLines<T = Record<string, unknown>>(
  level = 'info',
): { logger: Logger; lines: T[]; text: () => string } {
  const lines: T[] = [];
  let out = '';
  const logger = createLogger({
    level,
    destination: new Writable({
      write(chunk: Buffer, _enc, done) {
        const s = chunk.toString();
        out += s;
        for (const l of s.split('\n')) if (l !== '') lines.push(JSON.parse(l) as T);
        done();
      },
    }),
  });
  return { logger, lines, text: () => out };
}
