/**
 * A namespace of `count` pods shaped like `test/support/churn-objects.ts` `churnPod` (~6.4 KB of
 * JSON each, 3 containers), created through the apiserver as a bench's dataset: the namespace's
 * `default` ServiceAccount first (no controller-manager in the plain fixture), then the pods, 16
 * POSTs at a time, the server-set metadata of `churnPod`'s stored shape left out.
 */
import { type Agent, request } from 'undici';
import { churnPod } from '../../test/support/churn-objects.ts';

/** The metadata the apiserver sets itself (a create must not carry it). */
const SERVER_SET = [
  'resourceVersion',
  'uid',
  'creationTimestamp',
  'managedFields',
  'generateName',
  'ownerReferences',
];

/**
 * Creates the ServiceAccount `default` and pods `pod-0…pod-<count-1>` in `ns` on `server`.
 * @throws Error naming the path and status of the first POST not answered 201.
 */
export async function createChurnPods(
  server: string,
  dispatcher: Agent,
  token: string,
  ns: string,
  count: number,
): Promise<void> {
  const post = async (path: string, body: unknown) => {
    const r = await request(`${server}${path}`, {
      dispatcher,
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await r.body.text();
    if (r.statusCode !== 201) throw new Error(`${path}: ${r.statusCode} ${text}`);
  };
  await post(`/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'default' } });
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < count; i = next++) {
        const p = churnPod(ns, `pod-${i}`, 0, i) as { metadata: Record<string, unknown> };
        for (const k of SERVER_SET) delete p.metadata[k];
        await post(`/api/v1/namespaces/${ns}/pods`, p);
      }
    }),
  );
}
