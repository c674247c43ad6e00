/**
 * Seeding a namespace of the real apiserver with many objects, concurrently: one POST each,
 * `concurrency` in flight (the fixture's raised --max-requests-inflight takes 32 easily).
 */
import assert from 'node:assert/strict';
import { request } from 'undici';
import type { Upstream } from '../../src/upstream/connection.ts';

/**
 * Creates `n` objects by POST to `collectionPath` (e.g. `/api/v1/namespaces/NS/configmaps`),
 * object `i` being `body(i)`; each answer must be 201 (the assertion names the apiserver's Status).
 */
export async function createMany(
  up: Upstream,
  collectionPath: string,
  n: number,
  body: (i: number) => unknown,
  concurrency = 16,
): Promise<void> {
  const auth = await up.authorization();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      const res = await request(`${up.baseUrl}${collectionPath}`, {
        method: 'POST',
        dispatcher: up.dispatcher,
        headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
        body: JSON.stringify(body(i)),
      });
      const text = await res.body.text();
      assert.equal(res.statusCode, 201, text);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}
