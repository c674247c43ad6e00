/**
 * Realistic objects for memory tests: shaped like what kube-apiserver v1.37 returns for a
 * controller-managed Pod (managedFields, several containers with env, probes, resources,
 * statuses) and for a ConfigMap carrying one large data value — the two extremes of "many
 * small JSON values" and "one big string" for the cache's memory accounting.
 */

/** A Pod of about `containers` × 1.3 KiB, unique per (`name`, `rv`, `gen`). */
export function churnPod(
  ns: string,
  name: string,
  rv: number,
  gen = 0,
  containers = 3,
): Record<string, unknown> {
  const cs = Array.from({ length: containers }, (_, i) => ({
    name: `c${i}`,
    image: `registry.example.com/team/app-${i}:v1.${gen}.${i}`,
    args: ['--listen=:8080', `--generation=${gen}`, '--log-level=info'],
    env: Array.from({ length: 8 }, (_, j) => ({ name: `ENV_${j}`, value: `value-${gen}-${i}-${j}` })),
    ports: [{ name: 'http', containerPort: 8080 + i, protocol: 'TCP' }],
    resources: { limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: '100m', memory: '128Mi' } },
    volumeMounts: [
      {
        name: 'kube-api-access-abcde',
        readOnly: true,
        mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
      },
    ],
    livenessProbe: {
      httpGet: { path: '/healthz', port: 8080 + i, scheme: 'HTTP' },
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    },
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
  }));
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name,
      generateName: `${name.slice(0, -5)}-`,
      namespace: ns,
      uid: `0a1b2c3d-${String(rv).padStart(4, '0').slice(-4)}-4e5f-8a9b-${name.padEnd(12, '0').slice(0, 12)}`,
      resourceVersion: String(rv),
      creationTimestamp: '2026-12-01T10:00:00Z',
      labels: {
        app: 'churn',
        'pod-template-hash': '5d8f7c9b6d',
        tier: `t${gen % 5}`,
        generation: String(gen),
      },
      annotations: {
        'example.com/revision': String(gen),
        'kubectl.kubernetes.io/restartedAt': '2026-12-01T10:00:00Z',
      },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: 'churn-5d8f7c9b6d',
          uid: '11111111-2222-3333-4444-555555555555',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-12-01T10:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': {
              'f:generateName': {},
              'f:labels': { '.': {}, 'f:app': {}, 'f:pod-template-hash': {} },
              'f:ownerReferences': { '.': {}, 'k:{"uid":"11111111-2222-3333-4444-555555555555"}': {} },
            },
            'f:spec': Object.fromEntries(
              cs.map((c) => [
                `k:{"name":"${c.name}"}`,
                { '.': {}, 'f:image': {}, 'f:name': {}, 'f:env': {}, 'f:ports': {} },
              ]),
            ),
          },
        },
      ],
    },
    spec: {
      volumes: [
        {
          name: 'kube-api-access-abcde',
          projected: {
            sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }],
            defaultMode: 420,
          },
        },
      ],
      containers: cs,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: 'default',
      nodeName: `node-${gen % 10}`,
      schedulerName: 'default-scheduler',
      tolerations: [
        {
          key: 'node.kubernetes.io/not-ready',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 300,
        },
      ],
      priority: 0,
      enableServiceLinks: true,
    },
    status: {
      phase: 'Running',
      conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
        type,
        status: 'True',
        lastProbeTime: null,
        lastTransitionTime: '2026-12-01T10:00:01Z',
      })),
      hostIP: '10.0.0.1',
      podIP: `10.1.${gen % 250}.${rv % 250}`,
      startTime: '2026-12-01T10:00:00Z',
      containerStatuses: cs.map((c) => ({
        name: c.name,
        state: { running: { startedAt: '2026-12-01T10:00:02Z' } },
        ready: true,
        restartCount: gen % 3,
        image: c.image,
        imageID: `${c.image}@sha256:${'ab'.repeat(32)}`,
        containerID: `containerd://${'cd'.repeat(32)}`,
        started: true,
      })),
      qosClass: 'Burstable',
    },
  };
}

/** A ConfigMap whose single data value makes it about `bytes` long. */
export function churnConfigMap(
  ns: string,
  name: string,
  rv: number,
  gen = 0,
  bytes = 64 * 1024,
): Record<string, unknown> {
  const unit = `${name}-${gen}-${rv};`;
  return {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: {
      name,
      namespace: ns,
      uid: `uid-${name}`,
      resourceVersion: String(rv),
      creationTimestamp: '2026-12-01T10:00:00Z',
      labels: { app: 'churn' },
    },
    data: { 'payload.txt': unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes) },
  };
}

/** A Deployment whose pod template is {@link churnPod}'s spec. */
export function churnDeployment(ns: string, name: string, rv: number, gen = 0): Record<string, unknown> {
  const p = churnPod(ns, `${name}-abcde`, rv, gen) as { metadata: Record<string, unknown>; spec: unknown };
  return {
    kind: 'Deployment',
    apiVersion: 'apps/v1',
    metadata: { ...p.metadata, name, generation: gen + 1 },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: 'churn' } },
      template: { metadata: { labels: { app: 'churn', tier: `t${gen % 5}` } }, spec: p.spec },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } },
    },
    status: {
      observedGeneration: gen + 1,
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
    },
  };
}
