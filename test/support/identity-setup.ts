/**
 * The objects issue 10's matrix reads, created on the fixture as its admin: plain Node objects
 * `n1`, `n2` (no kubelet), and in each namespace given a `default` ServiceAccount (the
 * ServiceAccount admission plugin wants one before a pod), the ConfigMap and the two pods of
 * {@link MATRIX_OBJECTS} bound to n1 and n2, labelled `idm=<run>`. Idempotent (`kubectl apply`).
 */
import type { Fixture } from '../fixture/index.ts';
import { MATRIX_OBJECTS } from './identity-matrix.ts';

/** Applies the matrix objects in `namespaces`; throws with kubectl's stderr on failure. */
export async function applyMatrixObjects(f: Fixture, namespaces: string[], run: string): Promise<void> {
  const labels = { idm: run };
  const items: unknown[] = ['n1', 'n2'].map((name) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
  }));
  for (const ns of namespaces) {
    items.push(
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: ns } },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: MATRIX_OBJECTS.configMap, namespace: ns, labels },
        data: { run },
      },
      ...(['n1', 'n2'] as const).map((n) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: n === 'n1' ? MATRIX_OBJECTS.podN1 : MATRIX_OBJECTS.podN2, namespace: ns, labels },
        spec: {
          nodeName: n,
          automountServiceAccountToken: false,
          containers: [{ name: 'c', image: 'registry.invalid/none' }],
        },
      })),
    );
  }
  const r = await f.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
  });
  if (r.code !== 0) throw new Error(`matrix objects: ${r.stderr}`);
}
