/** Reading a watch cache watcher's output synchronously, for tests that assert on its wire lines. */
import type { CacheWatcher } from '../../src/cache/cache-watcher.ts';

/** Reads every line available now from `w.stream`, without waiting. */
export function drain(w: CacheWatcher): string[] {
  const out: string[] = [];
  for (let c = w.stream.read(); c !== null; c = w.stream.read()) out.push(String(c));
  return out;
}
