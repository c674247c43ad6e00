/** Reading a watch cache watcher's output synchronously, for tests that assert on its wire lines. */
import type { CacheWatcher } from '../../src/cache/cache-watcher.ts';

/** Reads every line available now from `w.stream`, without waiting. */
export function drain(w: CacheWatcher): string[] {
  const out: string[] = [];
  // An item is one event: a Buffer, or the chunks of one line (WireLine).
  for (let c = w.stream.read(); c !== null; c = w.stream.read())
    out.push(String(Buffer.isBuffer(c) ? c : Buffer.concat(c as Buffer[])));
  return out;
}
