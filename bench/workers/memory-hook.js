/**
 * Preloaded into a bench proxy process (`node --expose-gc --import=bench/workers/memory-hook.js …`, see
 * bench/support/proxy-process.ts): reads commands from stdin, one a line, and answers each on stderr as
 * `KCP_MEMORY {json}` with `process.memoryUsage()` (bytes):
 * - `sample`: as it is now;
 * - `gc`: after two forced full collections (`--expose-gc`);
 * - `snapshot PATH`: after the collections, also writes a V8 heap snapshot to PATH.
 * Every answer also carries `spaces`: each V8 heap space's used and committed (physical) bytes,
 * `{ old_space: [used, physical], … }` (`v8.getHeapSpaceStatistics()`).
 * Bench-only: nothing under src/ knows about it. Plain JavaScript, not TypeScript: a `.ts`
 * preload makes Node load its type stripper (amaro) into the proxy, +18 MiB of RSS measured
 * with the built CLI (issue 12), which the memory rows would count as the proxy's.
 */
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';

/** @type {(() => void) | undefined} */
const gc = /** @type {{ gc?: () => void }} */ (globalThis).gc;
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (/** @type {string} */ d) => {
  buf += d;
  for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
    const cmd = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    if (cmd !== 'sample') {
      gc?.();
      gc?.();
    }
    if (cmd.startsWith('snapshot ')) writeHeapSnapshot(cmd.slice('snapshot '.length));
    const m = process.memoryUsage();
    /** @type {Record<string, [number, number]>} */
    const spaces = {};
    for (const sp of getHeapSpaceStatistics())
      spaces[sp.space_name] = [sp.space_used_size, sp.physical_space_size];
    process.stderr.write(
      `KCP_MEMORY ${JSON.stringify({ cmd, gc: Boolean(gc) && cmd !== 'sample', ...m, spaces })}\n`,
    );
  }
});
// Never keep the proxy alive on its own account.
/** @type {{ unref?: () => void }} */ (/** @type {unknown} */ (process.stdin)).unref?.();
