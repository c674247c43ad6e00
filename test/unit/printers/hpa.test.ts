/** `printHorizontalPodAutoscaler` / `formatHPAMetrics` (printers_test.go `TestPrintHPA`, v1.37.2). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { printHorizontalPodAutoscaler } from '../../../src/printers/hpa.ts';

const NOW = Date.parse('2026-01-01T01:00:00Z');
const hpa = (metrics: unknown[], currentMetrics: unknown[] = [], extra: object = {}) => ({
  metadata: { name: 'h', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { scaleTargetRef: { kind: 'Deployment', name: 'd' }, maxReplicas: 10, metrics, ...extra },
  status: { currentReplicas: 4, currentMetrics },
});
const targets = (h: object) => printHorizontalPodAutoscaler(h, NOW).cells[2];

describe('printHorizontalPodAutoscaler', () => {
  it('no metrics: <none>; min <unset>; max and replicas as integers', () => {
    assert.deepEqual(printHorizontalPodAutoscaler(hpa([]), NOW).cells, [
      'h',
      'Deployment/d',
      '<none>',
      '<unset>',
      10,
      4,
      '60m',
    ]);
    assert.equal(printHorizontalPodAutoscaler(hpa([], [], { minReplicas: 2 }), NOW).cells[3], '2');
  });
  it('resource utilization and average value, current or <unknown>, target or <auto>', () => {
    const util = {
      type: 'Resource',
      resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } },
    };
    assert.equal(targets(hpa([util])), 'cpu: <unknown>/80%');
    assert.equal(
      targets(
        hpa([util], [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: 50 } } }]),
      ),
      'cpu: 50%/80%',
    );
    const noTarget = { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization' } } };
    assert.equal(targets(hpa([noTarget])), 'cpu: <unknown>/<auto>');
    const avg = {
      type: 'Resource',
      resource: { name: 'memory', target: { type: 'AverageValue', averageValue: '1Gi' } },
    };
    assert.equal(
      targets(
        hpa([avg], [{ type: 'Resource', resource: { name: 'memory', current: { averageValue: '600Mi' } } }]),
      ),
      'memory: 600Mi/1Gi',
    );
  });
  it('pods, object and external metrics; more than two: + N more...', () => {
    const pods = {
      type: 'Pods',
      pods: { metric: { name: 'q' }, target: { type: 'AverageValue', averageValue: '10' } },
    };
    const obj = { type: 'Object', object: { metric: { name: 'r' }, target: { type: 'Value', value: '2k' } } };
    const ext = {
      type: 'External',
      external: { metric: { name: 'e' }, target: { type: 'AverageValue', averageValue: '30' } },
    };
    assert.equal(
      targets(
        hpa(
          [pods, obj, ext],
          [
            { type: 'Pods', pods: { current: { averageValue: '7' } } },
            { type: 'Object', object: { current: { value: '1k' } } },
          ],
        ),
      ),
      '7/10, 1k/2k + 1 more...',
    );
    assert.equal(targets(hpa([ext])), '<unknown>/30 (avg)');
    assert.equal(targets(hpa([{ type: 'Other' }])), '<unknown type>');
  });
});
