/**
 * `npm start`'s check of its two listen addresses before anything is built or started (the
 * fixture apiserver takes ~10 s): an address in use or not bindable is named with its flag, on
 * one line, so a second `npm start` says what to change instead of failing late with a stack trace.
 */
import { createServer } from 'node:net';

/** One address to check: the flag that sets it, and where it binds. */
export interface ListenCheck {
  flag: string;
  host: string;
  port: number;
}

/**
 * Binds each address for a moment and releases it; port 0 (any free port) is not checked.
 * Resolves to undefined when all are free, else one line naming the first that is not, e.g.
 * `127.0.0.1:8001 (--listen) is already in use: pass another, e.g. npm start -- --listen 127.0.0.1:8002`.
 */
export async function busyListenAddress(checks: readonly ListenCheck[]): Promise<string | undefined> {
  for (const c of checks) {
    if (c.port === 0) continue;
    const err = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      const s = createServer();
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e));
      s.listen({ host: c.host, port: c.port, exclusive: true }, () => s.close(() => resolve(undefined)));
    });
    if (!err) continue;
    const where = `${c.host.includes(':') ? `[${c.host}]` : c.host}:${c.port}`;
    const next = `${c.host.includes(':') ? `[${c.host}]` : c.host}:${c.port + 1}`;
    const why =
      err.code === 'EADDRINUSE' ? 'is already in use' : `cannot be bound (${err.code ?? err.message})`;
    return `${where} (--${c.flag}) ${why}: pass another, e.g. npm start -- --${c.flag} ${next}`;
  }
  return undefined;
}
