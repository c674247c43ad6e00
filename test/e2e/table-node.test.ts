/**
 * Issue 32, nodes (`src/printers/node.ts`, `printNode`), side by side with the fixture apiserver
 * (`test/support/table-side-by-side.ts`): a ready node with roles, addresses and node info, and a
 * cordoned one with no status at all (as a node is before its kubelet reports).
 */
import { type TableKind, tableSuite } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [['/api/v1/nodes', 'nodes']];

tableSuite('issue 32: Table answers of nodes (printNode) equal the apiserver', KINDS, {
  async setup(s) {
    const { create, status, meta, run } = s;
    await create('/api/v1/nodes', {
      metadata: meta(`${run}-n1`, {
        labels: { t32: run, 'node-role.kubernetes.io/control-plane': '', 'kubernetes.io/role': 'edge' },
      }),
    });
    await status(`/api/v1/nodes/${run}-n1`, {
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
      addresses: [
        { type: 'InternalIP', address: '10.1.0.1' },
        { type: 'ExternalIP', address: '1.2.3.4' },
      ],
      nodeInfo: {
        kubeletVersion: 'v1.37.2',
        osImage: 'Test OS',
        kernelVersion: '6.1.0',
        architecture: 'amd64',
        containerRuntimeVersion: 'containerd://2.0',
        machineID: '',
        systemUUID: '',
        bootID: '',
        kubeProxyVersion: '',
        operatingSystem: 'linux',
      },
    });
    await create('/api/v1/nodes', { metadata: meta(`${run}-n2`), spec: { unschedulable: true } });
  },
  async cleanup(s) {
    for (const n of [`${s.run}-n1`, `${s.run}-n2`]) await s.f.kubectl(['delete', 'node', n, '--wait=false']);
  },
});
