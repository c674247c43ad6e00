/**
 * Issue 32, horizontal pod autoscalers (`src/printers/hpa.ts`, `printHorizontalPodAutoscaler`),
 * side by side with the fixture apiserver (`test/support/table-side-by-side.ts`).
 */
import { type TableKind, tableSuite } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [
  ['ns:/apis/autoscaling/v2/horizontalpodautoscalers', 'horizontalpodautoscalers.autoscaling'],
];

tableSuite('issue 32: Table answers of horizontal pod autoscalers equal the apiserver', KINDS, {
  async setup(s) {
    const { create, status, meta, ns } = s;
    const hpa = `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`;
    const target = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'dep-a' };
    await create(hpa, {
      metadata: meta('hpa-a'),
      spec: {
        scaleTargetRef: target,
        minReplicas: 2,
        maxReplicas: 10,
        metrics: [
          {
            type: 'Resource',
            resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } },
          },
          {
            type: 'Pods',
            pods: { metric: { name: 'qps' }, target: { type: 'AverageValue', averageValue: '1k' } },
          },
          {
            type: 'External',
            external: { metric: { name: 'queue' }, target: { type: 'AverageValue', averageValue: '30' } },
          },
        ],
      },
    });
    await status(`${hpa}/hpa-a`, {
      currentReplicas: 3,
      desiredReplicas: 4,
      currentMetrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', current: { averageUtilization: 55, averageValue: '100m' } },
        },
      ],
    });
    await create(hpa, { metadata: meta('hpa-default'), spec: { scaleTargetRef: target, maxReplicas: 3 } });
    await create(hpa, {
      metadata: meta('hpa-b'),
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'sts-a' },
        maxReplicas: 5,
        metrics: [
          {
            type: 'Resource',
            resource: { name: 'memory', target: { type: 'AverageValue', averageValue: '512Mi' } },
          },
          {
            type: 'Object',
            object: {
              describedObject: { apiVersion: 'v1', kind: 'Service', name: 'svc-ip' },
              metric: { name: 'rps' },
              target: { type: 'Value', value: '2k' },
            },
          },
        ],
      },
    });
    await status(`${hpa}/hpa-b`, {
      currentReplicas: 1,
      desiredReplicas: 1,
      currentMetrics: [
        { type: 'Resource', resource: { name: 'memory', current: { averageValue: '300Mi' } } },
        {
          type: 'Object',
          object: {
            describedObject: { apiVersion: 'v1', kind: 'Service', name: 'svc-ip' },
            metric: { name: 'rps' },
            current: { value: '1500' },
          },
        },
      ],
    });
  },
});
