/**
 * A body of `server/filled-body.ts` read as a writer reads it, in buffers of changing sizes
 * (pieces cut anywhere), for tests that compare its bytes.
 */
import assert from 'node:assert/strict';
import type { FilledBody } from '../../src/server/filled-body.ts';

/**
 * `body` filled in buffers of sizes 1, `sizes(1)`, `sizes(sizes(1))`, … until it returns 0,
 * concatenated; asserts it filled its `length` and stays ended.
 */
export function filledIn(body: FilledBody, sizes: (n: number) => number): Buffer {
  const parts: Buffer[] = [];
  for (let n = 1; ; n = sizes(n)) {
    const b = Buffer.alloc(n);
    const got = body.fill(b);
    if (got === 0) break;
    parts.push(b.subarray(0, got));
  }
  const all = Buffer.concat(parts);
  assert.equal(all.length, body.length);
  assert.equal(body.fill(Buffer.alloc(8)), 0, 'ended');
  return all;
}
