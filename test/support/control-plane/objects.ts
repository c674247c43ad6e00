/**
 * The objects of the control-plane workload (workload.ts): pods that KWOK runs on the `type=kwok`
 * nodes and that a node lifecycle eviction takes within seconds, and the manifests of each step.
 */

/** The namespace most steps use. */
export const WORK_NS = 'cp-work';
/** The namespace of the ResourceQuota step (its quota limits every pod in it). */
export const QUOTA_NS = 'cp-quota';
/** The namespace filled with many kinds of objects, then deleted. */
export const DOOMED_NS = 'cp-doomed';
/** The node the node-not-ready step makes NotReady (no kubelet: its status is written by the workload). */
export const MANUAL_NODE = 'manual-node';

/** How long the workload's pods tolerate a not-ready or unreachable node (the default is 300 s). */
export const TOLERATION_SECONDS = 2;

/**
 * A pod spec KWOK runs (scheduled onto `type=kwok` nodes), deleted at once (no grace: there is no
 * container to stop), evicted {@link TOLERATION_SECONDS} after its node turns NotReady.
 */
export function podSpec(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    nodeSelector: { type: 'kwok' },
    terminationGracePeriodSeconds: 0,
    tolerations: ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'].map((key) => ({
      key,
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: TOLERATION_SECONDS,
    })),
    containers: [{ name: 'main', image: 'kcp.test/fake:1' }],
    ...extra,
  };
}

/** A pod template labelled `app=<app>` (plus `labels`). */
export function template(
  app: string,
  labels: Record<string, string> = {},
  spec: Record<string, unknown> = {},
) {
  return { metadata: { labels: { app, ...labels } }, spec: podSpec(spec) };
}

/** A Deployment `name` (label `app=name`) of `replicas` in `ns`. */
export function deployment(ns: string, name: string, replicas: number) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: template(name) },
  };
}

/** A `kind: List` of `items`, for one `kubectl apply`. */
export function list(items: unknown[]): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
}

/**
 * About twenty kinds of namespaced objects in `ns` (the namespace-delete step): the namespace
 * controller must delete every one of them (and the pods, ReplicaSets, ControllerRevisions and
 * EndpointSlices the controllers made from them) before the namespace goes.
 */
export function manyKinds(ns: string): unknown[] {
  const m = (name: string) => ({ name, namespace: ns });
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: m('cm'), data: { a: '1' } },
    { apiVersion: 'v1', kind: 'Secret', metadata: m('secret'), stringData: { a: '1' } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: m('sa') },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: m('svc'),
      spec: { selector: { app: 'doomed' }, ports: [{ port: 80 }] },
    },
    { apiVersion: 'v1', kind: 'PodTemplate', metadata: m('tmpl'), template: template('tmpl') },
    {
      apiVersion: 'v1',
      kind: 'ReplicationController',
      metadata: m('rc'),
      spec: { replicas: 1, selector: { app: 'rc' }, template: template('rc') },
    },
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: m('pvc'),
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    },
    { apiVersion: 'v1', kind: 'LimitRange', metadata: m('lr'), spec: { limits: [{ type: 'Container' }] } },
    { apiVersion: 'v1', kind: 'ResourceQuota', metadata: m('rq'), spec: { hard: { pods: '50' } } },
    { apiVersion: 'v1', kind: 'Pod', metadata: { ...m('bare'), labels: { app: 'doomed' } }, spec: podSpec() },
    deployment(ns, 'dep', 2),
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: m('sts'),
      spec: {
        replicas: 1,
        serviceName: 'svc',
        podManagementPolicy: 'Parallel',
        selector: { matchLabels: { app: 'sts' } },
        template: template('sts'),
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: m('ds'),
      spec: { selector: { matchLabels: { app: 'ds' } }, template: template('ds') },
    },
    {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: m('job'),
      spec: { template: template('job', {}, { restartPolicy: 'Never' }) },
    },
    {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: m('cron'),
      spec: {
        schedule: '0 0 1 1 *',
        suspend: true,
        jobTemplate: { spec: { template: template('cron', {}, { restartPolicy: 'Never' }) } },
      },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: m('pdb'),
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'dep' } } },
    },
    {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: m('hpa'),
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'dep' },
        minReplicas: 2,
        maxReplicas: 3,
      },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: m('np'),
      spec: { podSelector: {} },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: m('ing'),
      spec: { defaultBackend: { service: { name: 'svc', port: { number: 80 } } } },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: m('role'),
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: m('rb'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'role' },
      subjects: [{ kind: 'ServiceAccount', name: 'sa', namespace: ns }],
    },
    {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: m('lease'),
      spec: { holderIdentity: 'x' },
    },
    {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: m('ev'),
      eventTime: '2026-01-01T00:00:00.000000Z',
      reportingController: 'kcp.test/workload',
      reportingInstance: 'workload',
      action: 'Test',
      reason: 'Test',
      type: 'Normal',
      regarding: { kind: 'ConfigMap', name: 'cm', namespace: ns },
    },
  ];
}
