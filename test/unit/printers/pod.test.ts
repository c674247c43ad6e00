/**
 * `printPod`'s STATUS, READY and RESTARTS for the states its Go code distinguishes (cases of
 * k8s.io/kubernetes `pkg/printers/internalversion/printers_test.go` `TestPrintPod*`, v1.37.2),
 * the completed-pod row condition and the wide cells. The e2e suite compares real pods with the
 * apiserver (test/e2e/table-pod.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { printPod } from '../../../src/printers/pod.ts';

const NOW = Date.parse('2026-01-01T01:00:00Z');
const pod = (spec: object, status: object, metadata: object = {}) => ({
  metadata: { name: 'p', creationTimestamp: '2026-01-01T00:00:00Z', ...metadata },
  spec,
  status,
});
const two = { containers: [{ name: 'a' }, { name: 'b' }] };

describe('printPod', () => {
  it('a pending pod: 0/N, its phase, 0 restarts, the age, <none> wide cells', () => {
    assert.deepEqual(printPod(pod(two, { phase: 'Pending' }), NOW).cells, [
      'p',
      '0/2',
      'Pending',
      '0',
      '60m',
      '<none>',
      '<none>',
      '<none>',
      '<none>',
    ]);
  });
  it('running: ready containers counted, restarts with the last termination age', () => {
    const r = printPod(
      pod(two, {
        phase: 'Running',
        podIPs: [{ ip: '10.0.0.1' }],
        containerStatuses: [
          {
            name: 'a',
            ready: true,
            restartCount: 3,
            state: { running: {} },
            lastState: { terminated: { finishedAt: '2026-01-01T00:55:00Z' } },
          },
          { name: 'b', ready: false, restartCount: 1, state: { waiting: { reason: 'CrashLoopBackOff' } } },
        ],
      }),
      NOW,
    );
    assert.deepEqual(r.cells.slice(1, 6), ['1/2', 'CrashLoopBackOff', '4 (5m ago)', '60m', '10.0.0.1']);
    assert.equal(r.conditions, undefined);
  });
  it('succeeded and failed pods carry the Completed row condition', () => {
    const r = printPod(pod(two, { phase: 'Succeeded' }), NOW);
    assert.deepEqual(r.conditions, [
      {
        type: 'Completed',
        status: 'True',
        reason: 'Succeeded',
        message: 'The pod has completed successfully.',
      },
    ]);
    assert.equal(printPod(pod(two, { phase: 'Failed' }), NOW).conditions?.[0]?.reason, 'Failed');
  });
  it('init containers: Init:i/n, Init:<reason>, Init:ExitCode, Init:Signal; sidecars count as containers', () => {
    const spec = { initContainers: [{ name: 'i1' }, { name: 'i2' }], containers: [{ name: 'a' }] };
    const st = (i2: object) => ({
      phase: 'Pending',
      initContainerStatuses: [
        { name: 'i1', state: { terminated: { exitCode: 0 } } },
        { name: 'i2', ...i2 },
      ],
    });
    assert.equal(printPod(pod(spec, st({ state: { running: {} } })), NOW).cells[2], 'Init:1/2');
    assert.equal(
      printPod(pod(spec, st({ state: { waiting: { reason: 'ErrImagePull' } } })), NOW).cells[2],
      'Init:ErrImagePull',
    );
    assert.equal(
      printPod(pod(spec, st({ state: { terminated: { exitCode: 2 } } })), NOW).cells[2],
      'Init:ExitCode:2',
    );
    assert.equal(
      printPod(pod(spec, st({ state: { terminated: { exitCode: 2, signal: 9 } } })), NOW).cells[2],
      'Init:Signal:9',
    );
    const sidecar = { initContainers: [{ name: 's', restartPolicy: 'Always' }], containers: [{ name: 'a' }] };
    const s = printPod(
      pod(sidecar, {
        phase: 'Running',
        conditions: [{ type: 'Initialized', status: 'True' }],
        initContainerStatuses: [
          { name: 's', started: true, ready: true, restartCount: 2, state: { running: {} } },
        ],
        containerStatuses: [{ name: 'a', ready: true, state: { running: {} } }],
      }),
      NOW,
    );
    assert.deepEqual(s.cells.slice(1, 4), ['2/2', 'Running', '2']);
  });
  it('Completed with a running container: Running when Ready, NotReady otherwise', () => {
    const st = (ready: boolean) => ({
      phase: 'Running',
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      containerStatuses: [
        { name: 'a', ready: true, state: { running: {} } },
        { name: 'b', state: { terminated: { exitCode: 0, reason: 'Completed' } } },
      ],
    });
    assert.equal(printPod(pod(two, st(true)), NOW).cells[2], 'Running');
    assert.equal(printPod(pod(two, st(false)), NOW).cells[2], 'NotReady');
  });
  it('terminating, NodeLost, SchedulingGated, readiness gates', () => {
    const deleting = { deletionTimestamp: '2026-01-01T00:59:00Z' };
    assert.equal(printPod(pod(two, { phase: 'Running' }, deleting), NOW).cells[2], 'Terminating');
    assert.equal(printPod(pod(two, { phase: 'Succeeded' }, deleting), NOW).cells[2], 'Succeeded');
    assert.equal(
      printPod(pod(two, { phase: 'Running', reason: 'NodeLost' }, deleting), NOW).cells[2],
      'Unknown',
    );
    const gated = printPod(
      pod(
        { ...two, readinessGates: [{ conditionType: 'x' }, { conditionType: 'y' }] },
        {
          phase: 'Pending',
          conditions: [
            { type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' },
            { type: 'x', status: 'True' },
          ],
        },
      ),
      NOW,
    );
    assert.equal(gated.cells[2], 'SchedulingGated');
    assert.equal(gated.cells[8], '1/2');
  });
  it('the empty object of a bookmark: what the apiserver prints for it', () => {
    assert.deepEqual(printPod({ metadata: { resourceVersion: '5' } }, NOW).cells, [
      '',
      '0/0',
      '',
      '0',
      '<unknown>',
      '<none>',
      '<none>',
      '<none>',
      '<none>',
    ]);
  });
});
