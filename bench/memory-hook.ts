/**
 * Preloaded into a bench proxy process (`node --expose-gc --import=bench/memory-hook.ts …`, see
 * bench/proxy-process.ts): reads commands from stdin, one a line, and answers each on stderr as
 * `KCP_MEMORY {json}` with `process.memoryUsage()` (bytes):
 * - `sample`: as it is now;
 * - `gc`: after two forced full collections (`--expose-gc`);
 * - `snapshot PATH`: after the collections, also writes a V8 heap snapshot to PATH.
 * Bench-only: nothing under src/ knows about it.
 */
import { writeHeapSnapshot } from 'node:v8';

const gc = (globalThis as { gc?: () => void }).gc;
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d: string) => {
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
    process.stderr.write(
      `KCP_MEMORY ${JSON.stringify({ cmd, gc: Boolean(gc) && cmd !== 'sample', ...m })}\n`,
    );
  }
});
// Never keep the proxy alive on its own account.
(process.stdin as unknown as { unref?: () => void }).unref?.();
