/**
 * Issue 32, the workload controllers (`src/printers/workloads.ts`: deployments, replicasets,
 * statefulsets, daemonsets, jobs done, suspended and running, cronjobs), side by side with the
 * fixture apiserver (`test/support/table-side-by-side.ts`). No controllers run: statuses set by
 * hand where they matter.
 */
import { type TableKind, tableSuite } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [
  ['ns:/apis/apps/v1/deployments', 'deployments.apps'],
  ['ns:/apis/apps/v1/replicasets', 'replicasets.apps'],
  ['ns:/apis/apps/v1/statefulsets', 'statefulsets.apps'],
  ['ns:/apis/apps/v1/daemonsets', 'daemonsets.apps'],
  ['ns:/apis/batch/v1/jobs', 'jobs.batch'],
  ['ns:/apis/batch/v1/cronjobs', 'cronjobs.batch'],
];

tableSuite('issue 32: Table answers of the workload controllers equal the apiserver', KINDS, {
  async setup(s) {
    const { create, status, meta, ago, ns } = s;
    const two = [
      { name: 'app', image: 'registry.k8s.io/pause:3.10' },
      { name: 'side', image: 'busybox' },
    ];
    const tpl = (containers: { name: string; image: string }[]) => ({
      metadata: { labels: { app: 'web' } },
      spec: { containers },
    });
    const selector = {
      matchLabels: { app: 'web' },
      matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['db', 'cache'] }],
    };
    const apps = `/apis/apps/v1/namespaces/${ns}`;
    const twoTpl = tpl(two);
    await create(`${apps}/deployments`, {
      metadata: meta('dep-a'),
      spec: { replicas: 3, selector, template: twoTpl },
    });
    await status(`${apps}/deployments/dep-a`, {
      replicas: 3,
      readyReplicas: 2,
      updatedReplicas: 3,
      availableReplicas: 2,
    });
    await create(`${apps}/replicasets`, {
      metadata: meta('rs-a'),
      spec: { replicas: 2, selector, template: twoTpl },
    });
    await create(`${apps}/statefulsets`, {
      metadata: meta('sts-a'),
      spec: { replicas: 2, serviceName: 'svc-none', selector, template: twoTpl },
    });
    await create(`${apps}/daemonsets`, {
      metadata: meta('ds-a'),
      spec: {
        selector,
        template: { ...twoTpl, spec: { ...twoTpl.spec, nodeSelector: { disk: 'ssd', zone: 'a' } } },
      },
    });
    const batch = `/apis/batch/v1/namespaces/${ns}`;
    const jobTpl = { spec: { restartPolicy: 'Never', containers: [two[0]!] } };
    await create(`${batch}/jobs`, { metadata: meta('job-run'), spec: { parallelism: 3, template: jobTpl } });
    await create(`${batch}/jobs`, {
      metadata: meta('job-susp'),
      spec: { suspend: true, completions: 4, template: jobTpl },
    });
    await create(`${batch}/jobs`, { metadata: meta('job-done'), spec: { completions: 1, template: jobTpl } });
    await status(`${batch}/jobs/job-done`, {
      startTime: ago(300),
      completionTime: ago(100),
      succeeded: 1,
      conditions: [
        { type: 'SuccessCriteriaMet', status: 'True' },
        { type: 'Complete', status: 'True' },
      ],
    });
    await create(`${batch}/cronjobs`, {
      metadata: meta('cj-a'),
      spec: {
        schedule: '*/5 * * * *',
        timeZone: 'Etc/UTC',
        suspend: true,
        jobTemplate: { spec: { template: jobTpl } },
      },
    });
    await create(`${batch}/cronjobs`, {
      metadata: meta('cj-b'),
      spec: { schedule: '@hourly', jobTemplate: { spec: { template: jobTpl } } },
    });
  },
});
