/**
 * Issue 32, persistent volumes and claims (`src/printers/volumes.ts`), side by side with the
 * fixture apiserver (`test/support/table-side-by-side.ts`).
 */
import { type TableKind, tableSuite } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [
  ['/api/v1/persistentvolumes', 'persistentvolumes'],
  ['ns:/api/v1/persistentvolumeclaims', 'persistentvolumeclaims'],
];

tableSuite('issue 32: Table answers of persistent volumes and claims equal the apiserver', KINDS, {
  async setup(s) {
    const { create, status, meta, ns, run } = s;
    const P = `/api/v1/namespaces/${ns}`;
    await create('/api/v1/persistentvolumes', {
      metadata: meta(`${run}-pv-a`),
      spec: {
        capacity: { storage: '5Gi' },
        accessModes: ['ReadWriteMany', 'ReadWriteOnce', 'ReadOnlyMany'],
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: 'fast',
        volumeMode: 'Filesystem',
        claimRef: { namespace: ns, name: 'pvc-a' },
        hostPath: { path: '/tmp/pv-a' },
      },
    });
    await status(`/api/v1/persistentvolumes/${run}-pv-a`, { phase: 'Released', reason: 'Gone' });
    await create('/api/v1/persistentvolumes', {
      metadata: meta(`${run}-pv-b`, { annotations: { 'volume.beta.kubernetes.io/storage-class': 'old' } }),
      spec: {
        capacity: { storage: '1500Mi' },
        accessModes: ['ReadWriteOncePod'],
        hostPath: { path: '/tmp/pv-b' },
      },
    });
    await create(`${P}/persistentvolumeclaims`, {
      metadata: meta('pvc-a'),
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        volumeName: `${run}-pv-a`,
        storageClassName: 'fast',
        volumeMode: 'Block',
      },
    });
    await status(`${P}/persistentvolumeclaims/pvc-a`, {
      phase: 'Bound',
      accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
      capacity: { storage: '5Gi' },
    });
    await create(`${P}/persistentvolumeclaims`, {
      metadata: meta('pvc-b', { annotations: { 'volume.beta.kubernetes.io/storage-class': '' } }),
      spec: { accessModes: ['ReadWriteMany'], resources: { requests: { storage: '2Gi' } } },
    });
  },
  async cleanup(s) {
    for (const n of ['pv-a', 'pv-b']) await s.f.kubectl(['delete', 'pv', `${s.run}-${n}`, '--wait=false']);
  },
});
