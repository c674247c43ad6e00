/**
 * Bearer tokens read from a file that rotates (projected service-account tokens, kubeconfig
 * `token-file`). Exports {@link FileTokenSource}, re-reading on change (checked at most every
 * 10 000 ms) and every 60 000 ms, as client-go's `transport.NewCachedFileTokenSource`.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Clock } from '../util/clock.ts';

/**
 * A bearer token read from a file that may rotate (projected service-account tokens are
 * re-issued about hourly; kubeconfig `token-file`). The file is re-read when its mtime or size
 * changes, checked at most every `checkEveryMs` (default 10 s), and unconditionally every
 * `maxAgeMs` (default 60 s, client-go `transport.NewCachedFileTokenSource` period) so a
 * rewrite with the same mtime is still picked up.
 * Throws (from {@link FileTokenSource.token}) only on the first read; later read failures keep
 * the last good token (the kubelet replaces the file atomically, but a transient error must not
 * drop credentials).
 */
export class FileTokenSource {
  readonly path: string;
  readonly #clock: Clock;
  readonly #checkEveryMs: number;
  readonly #maxAgeMs: number;
  #token: string | undefined;
  #readAt = 0;
  #checkedAt = 0;
  #sig = '';

  constructor(path: string, clock: Clock, opts: { checkEveryMs?: number; maxAgeMs?: number } = {}) {
    this.path = path;
    this.#clock = clock;
    this.#checkEveryMs = opts.checkEveryMs ?? 10_000;
    this.#maxAgeMs = opts.maxAgeMs ?? 60_000;
  }

  /** The current token (whitespace trimmed). */
  token(): string {
    const now = this.#clock.now();
    if (this.#token === undefined) return this.#read(now);
    if (now - this.#readAt >= this.#maxAgeMs) return this.#tryRead(now);
    if (now - this.#checkedAt >= this.#checkEveryMs) {
      this.#checkedAt = now;
      try {
        const st = statSync(this.path);
        if (`${st.mtimeMs}:${st.size}` !== this.#sig) return this.#tryRead(now);
      } catch {
        // keep the last good token
      }
    }
    return this.#token;
  }

  #tryRead(now: number): string {
    try {
      return this.#read(now);
    } catch {
      return this.#token ?? '';
    }
  }

  #read(now: number): string {
    const st = statSync(this.path);
    const t = readFileSync(this.path, 'utf8').trim();
    this.#sig = `${st.mtimeMs}:${st.size}`;
    this.#token = t;
    this.#readAt = now;
    this.#checkedAt = now;
    return t;
  }
}
