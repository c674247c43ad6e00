/**
 * Issue 32, pods (`src/printers/pod.ts`, `printPod`), side by side with the fixture apiserver
 * (`test/support/table-side-by-side.ts`): pending with init containers, running with restarts
 * and a crash-looping container, succeeded, init-failing, scheduling-gated with a readiness
 * gate, terminating.
 */
import assert from 'node:assert/strict';
import { type TableKind, tableSuite } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [['ns:/api/v1/pods', 'pods']];

tableSuite('issue 32: Table answers of pods (printPod) equal the apiserver', KINDS, {
  async setup(s) {
    const { create, status, meta, ago, ns, f } = s;
    const P = `/api/v1/namespaces/${ns}`;
    // The fixture runs no ServiceAccount controller: pods need their namespace's default one.
    await create(`${P}/serviceaccounts`, { metadata: meta('default') });
    const two = [
      { name: 'app', image: 'registry.k8s.io/pause:3.10' },
      { name: 'side', image: 'busybox' },
    ];
    await create(`${P}/pods`, {
      metadata: meta('p-pending'),
      spec: { initContainers: [{ name: 'init', image: 'busybox' }], containers: two },
    });
    await create(`${P}/pods`, { metadata: meta('p-running'), spec: { nodeName: 'n1', containers: two } });
    await status(`${P}/pods/p-running`, {
      phase: 'Running',
      podIP: '10.0.0.7',
      podIPs: [{ ip: '10.0.0.7' }],
      conditions: [
        { type: 'Initialized', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
      containerStatuses: [
        {
          name: 'app',
          image: 'x',
          imageID: '',
          ready: true,
          restartCount: 3,
          state: { running: { startedAt: ago(30) } },
          lastState: { terminated: { exitCode: 1, finishedAt: ago(400), reason: 'Error' } },
        },
        {
          name: 'side',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: 'CrashLoopBackOff' } },
        },
      ],
    });
    await create(`${P}/pods`, {
      metadata: meta('p-done'),
      spec: { containers: [two[0]!], restartPolicy: 'Never' },
    });
    await status(`${P}/pods/p-done`, {
      phase: 'Succeeded',
      containerStatuses: [
        {
          name: 'app',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: ago(10) } },
        },
      ],
    });
    await create(`${P}/pods`, {
      metadata: meta('p-init'),
      spec: {
        initContainers: [
          { name: 'i1', image: 'busybox' },
          { name: 'i2', image: 'busybox' },
        ],
        containers: [two[0]!],
      },
    });
    await status(`${P}/pods/p-init`, {
      phase: 'Pending',
      initContainerStatuses: [
        {
          name: 'i1',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 0, finishedAt: ago(5) } },
        },
        {
          name: 'i2',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 2,
          state: { waiting: { reason: 'ErrImagePull' } },
        },
      ],
    });
    await create(`${P}/pods`, {
      metadata: meta('p-gated'),
      spec: {
        schedulingGates: [{ name: 'example.com/gate' }],
        readinessGates: [{ conditionType: 'example.com/ready' }],
        containers: [two[0]!],
      },
    });
    await create(`${P}/pods`, {
      metadata: meta('p-term', { finalizers: ['example.com/hold'] }),
      spec: { containers: [two[0]!] },
    });
    assert.equal((await f.kubectl(['-n', ns, 'delete', 'pod', 'p-term', '--wait=false'])).code, 0);
  },
  async cleanup(s) {
    await s.f.kubectl([
      '-n',
      s.ns,
      'patch',
      'pod',
      'p-term',
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    ]);
  },
});
