/**
 * Issue 32: kubectl's Table answered from the cache, side by side with the fixture apiserver.
 * For every ported kind, objects in ordinary and odd states (pending, running with restarts,
 * succeeded, terminating, init-failing and scheduling-gated pods; multiple and init containers;
 * ready and cordoned nodes; each Service type, external IPs, no ports; a terminating namespace;
 * jobs done, suspended and running; …) are created directly, then:
 * - the Table JSON (`includeObject` Metadata, None, Object; v1 and v1beta1) of a LIST, of each
 *   page of a paged LIST and of a GET equals the apiserver's field for field, with the age cells
 *   and the list's resourceVersion (the cache's own, as for any LIST) masked, and is served from
 *   the cache;
 * - kubectl's `get`, `-o wide`, `--show-labels`, `-L`, `--sort-by` print the same (ages masked);
 * - a Table watch sends the same events (columns in the first only), and `kubectl get -w` prints
 *   the same lines;
 * - a Table LIST answered from the cache does not send the next plain LIST upstream.
 * Custom resources are printed from their CRD's additionalPrinterColumns (every column type,
 * filters, missing and null values, priority; a CRD declaring none prints Age); ingresses,
 * ingress classes, persistent volumes and claims, and HPAs from their ported printers.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const KUBECTL =
  'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const AGE = /^(<invalid>|\d+[smhdy](\d+[smhd])?)$/;
const AGE_IN_TEXT = /\b\d+[smhdy](\d+[smhd])?\b/g;

interface Answer {
  status: number;
  body: string;
  fromCache: boolean;
}

/** A Table with its ages and its list RV (and the continue token carrying it) masked. */
function masked(body: string): unknown {
  const t = JSON.parse(body) as {
    metadata: { resourceVersion?: string; continue?: string };
    rows: { cells: unknown[] }[] | null;
  };
  if (t.metadata.resourceVersion !== undefined) t.metadata.resourceVersion = 'N';
  if (t.metadata.continue !== undefined) t.metadata.continue = 'TOKEN';
  for (const r of t.rows ?? [])
    r.cells = r.cells.map((c) =>
      typeof c === 'string'
        ? AGE.test(c)
          ? 'AGE'
          : c.replace(/\(\d+[smhdy](\d+[smhd])? ago\)/, '(AGE ago)')
        : c,
    );
  return t;
}

/** kubectl's printed table with ages masked and column padding collapsed (ages change widths). */
function printed(out: string): string[] {
  return out
    .split('\n')
    .map((l) => l.replace(AGE_IN_TEXT, 'AGE').replace(/\s+/g, ' ').trim())
    .filter((l) => l !== '');
}

describe('issue 32: Table answers from the cache equal the apiserver', () => {
  let f: Fixture;
  let agent: Agent;
  let auth: Record<string, string>;
  let proxy: InProcessProxy;
  let ns: string;
  let nsGone: string;
  const run = `t${Date.now().toString(36)}`;
  const sel = `t32=${run}`;

  const http = async (base: string, path: string, accept?: string, method = 'GET', body?: unknown) => {
    const r = await request(`${base}${path}`, {
      dispatcher: agent,
      method: method as 'GET',
      headers: { ...auth, 'content-type': 'application/merge-patch+json', ...(accept ? { accept } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await r.body.text();
    return { status: r.statusCode, body: text, fromCache: r.headers['audit-id'] === undefined } as Answer;
  };
  const direct = (path: string, accept?: string) => http(f.server, path, accept);
  const via = (path: string, accept?: string) => http(proxy.url, path, accept);
  const create = async (path: string, obj: Record<string, unknown>) => {
    const r = await request(`${f.server}${path}`, {
      dispatcher: agent,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(obj),
    });
    const text = await r.body.text();
    assert.equal(r.statusCode, 201, `${path}: ${text}`);
    return JSON.parse(text) as { metadata: { name: string } };
  };
  const status = async (path: string, st: Record<string, unknown>) => {
    const r = await http(f.server, `${path}/status`, undefined, 'PATCH', { status: st });
    assert.equal(r.status, 200, `${path}/status: ${r.body}`);
  };
  const meta = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    labels: { t32: run, app: name.split('-')[0]! },
    ...extra,
  });
  const tpl = (containers = [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }]) => ({
    metadata: { labels: { app: 'web' } },
    spec: { containers },
  });
  const ago = (s: number) => new Date(Date.now() - s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

  /** [resource path (namespaced under ns when it starts with `ns:`), kubectl resource name]. */
  const KINDS: [string, string][] = [
    ['ns:/api/v1/pods', 'pods'],
    ['/api/v1/nodes', 'nodes'],
    ['/api/v1/namespaces', 'namespaces'],
    ['ns:/api/v1/services', 'services'],
    ['ns:/api/v1/configmaps', 'configmaps'],
    ['ns:/api/v1/secrets', 'secrets'],
    ['ns:/api/v1/serviceaccounts', 'serviceaccounts'],
    ['ns:/api/v1/events', 'events'],
    ['ns:/apis/apps/v1/deployments', 'deployments.apps'],
    ['ns:/apis/apps/v1/replicasets', 'replicasets.apps'],
    ['ns:/apis/apps/v1/statefulsets', 'statefulsets.apps'],
    ['ns:/apis/apps/v1/daemonsets', 'daemonsets.apps'],
    ['ns:/apis/batch/v1/jobs', 'jobs.batch'],
    ['ns:/apis/batch/v1/cronjobs', 'cronjobs.batch'],
    ['ns:/apis/discovery.k8s.io/v1/endpointslices', 'endpointslices.discovery.k8s.io'],
    ['ns:/apis/coordination.k8s.io/v1/leases', 'leases.coordination.k8s.io'],
    ['ns:/apis/rbac.authorization.k8s.io/v1/roles', 'roles.rbac.authorization.k8s.io'],
    ['ns:/apis/rbac.authorization.k8s.io/v1/rolebindings', 'rolebindings.rbac.authorization.k8s.io'],
    ['/apis/rbac.authorization.k8s.io/v1/clusterroles', 'clusterroles.rbac.authorization.k8s.io'],
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      'clusterrolebindings.rbac.authorization.k8s.io',
    ],
    ['ns:/apis/policy/v1/poddisruptionbudgets', 'poddisruptionbudgets.policy'],
    ['ns:/apis/networking.k8s.io/v1/networkpolicies', 'networkpolicies.networking.k8s.io'],
    [
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      'customresourcedefinitions.apiextensions.k8s.io',
    ],
    ['ns:/apis/networking.k8s.io/v1/ingresses', 'ingresses.networking.k8s.io'],
    ['/apis/networking.k8s.io/v1/ingressclasses', 'ingressclasses.networking.k8s.io'],
    ['/api/v1/persistentvolumes', 'persistentvolumes'],
    ['ns:/api/v1/persistentvolumeclaims', 'persistentvolumeclaims'],
    ['ns:/apis/autoscaling/v2/horizontalpodautoscalers', 'horizontalpodautoscalers.autoscaling'],
    // Custom resources: columns of every type from the CRD, and a CRD declaring none (Age).
    [`ns:/apis/${run}.example.com/v1/widgets`, `widgets.${run}.example.com`],
    [`/apis/${run}.example.com/v1/plainthings`, `plainthings.${run}.example.com`],
  ];
  const path = (p: string) =>
    p.startsWith('ns:') ? p.slice(3).replace(/\/([a-z]+)$/, `/namespaces/${ns}/$1`) : p;

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    auth = { authorization: `Bearer ${f.tokens.admin}`, 'user-agent': 'e2e' };
    ns = await f.newNamespace('table');
    nsGone = await f.newNamespace('table-gone');
    const P = `/api/v1/namespaces/${ns}`;
    await create(`${P}/serviceaccounts`, { metadata: meta('default') });
    // Namespaces: one Active, one Terminating (nothing finalizes it in the fixture).
    for (const n of [ns, nsGone]) {
      const r = await http(f.server, `/api/v1/namespaces/${n}`, undefined, 'PATCH', {
        metadata: { labels: { t32: run } },
      });
      assert.equal(r.status, 200, r.body);
    }
    await create(`${P}/configmaps`, { metadata: meta('cm-gone') });
    assert.equal((await f.kubectl(['delete', 'namespace', nsGone, '--wait=false'])).code, 0);
    await http(f.server, `/api/v1/namespaces/${ns}/configmaps/cm-gone`, undefined, 'DELETE');

    // Pods.
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

    // Nodes.
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

    // Services.
    await create(`${P}/services`, {
      metadata: meta('svc-ip'),
      spec: {
        selector: { app: 'web', tier: 'fe' },
        ports: [
          { port: 80, name: 'http' },
          { port: 53, protocol: 'UDP', name: 'dns' },
        ],
      },
    });
    await create(`${P}/services`, {
      metadata: meta('svc-np'),
      spec: { type: 'NodePort', externalIPs: ['5.6.7.8'], ports: [{ port: 443 }] },
    });
    await create(`${P}/services`, {
      metadata: meta('svc-lb'),
      spec: { type: 'LoadBalancer', ports: [{ port: 8080 }] },
    });
    await status(`${P}/services/svc-lb`, {
      loadBalancer: { ingress: [{ ip: '9.9.9.9' }, { hostname: 'lb.example.com' }, { ip: '9.9.9.1' }] },
    });
    await create(`${P}/services`, {
      metadata: meta('svc-en'),
      spec: { type: 'ExternalName', externalName: 'db.example.com' },
    });
    await create(`${P}/services`, {
      metadata: meta('svc-none'),
      spec: { clusterIP: 'None', selector: { app: 'x' } },
    });

    // ConfigMaps, Secrets, ServiceAccounts, Events.
    await create(`${P}/configmaps`, {
      metadata: meta('cm-a'),
      data: { a: '1', b: '2' },
      binaryData: { c: 'AA==' },
    });
    await create(`${P}/configmaps`, { metadata: meta('cm-empty') });
    await create(`${P}/secrets`, { metadata: meta('sec-a'), type: 'Opaque', data: { a: 'AA==' } });
    await create(`${P}/secrets`, {
      metadata: meta('sec-tls'),
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': 'AA==', 'tls.key': 'AA==' },
    });
    await create(`${P}/serviceaccounts`, { metadata: meta('sa-a') });
    await create(`${P}/events`, {
      metadata: meta('ev-a'),
      involvedObject: { kind: 'Pod', name: 'p-running', namespace: ns, fieldPath: 'spec.containers{app}' },
      reason: 'BackOff',
      message: '  Back-off restarting failed container  ',
      type: 'Warning',
      source: { component: 'kubelet', host: 'n1' },
      count: 5,
      firstTimestamp: ago(600),
      lastTimestamp: ago(20),
    });
    await create(`${P}/events`, {
      metadata: meta('ev-b'),
      involvedObject: { kind: 'ConfigMap', namespace: ns },
      reason: 'Starting',
      message: 'hello',
      type: 'Normal',
      eventTime: new Date(Date.now() - 90_000).toISOString().replace(/Z$/, '000Z'),
      reportingComponent: 'test-controller',
      reportingInstance: 'inst-1',
      action: 'Start',
    });

    // Workloads (no controllers run: statuses set by hand where they matter).
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

    // EndpointSlices, Leases, RBAC, PDBs, NetworkPolicies, a CRD.
    await create(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
      metadata: meta('eps-a'),
      addressType: 'IPv4',
      ports: [{ port: 80 }, { name: 'https', port: 443 }, { name: 'named' }, { name: 'metrics', port: 9090 }],
      endpoints: [
        { addresses: ['10.0.0.1', '10.0.0.2'] },
        { addresses: ['10.0.0.3', '10.0.0.4', '10.0.0.5'] },
      ],
    });
    await create(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
      metadata: meta('eps-empty'),
      addressType: 'FQDN',
    });
    await create(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, {
      metadata: meta('lease-a'),
      spec: { holderIdentity: 'me_1' },
    });
    await create(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, {
      metadata: meta('lease-b'),
      spec: {},
    });
    const rbac = '/apis/rbac.authorization.k8s.io/v1';
    const rules = [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }];
    await create(`${rbac}/namespaces/${ns}/roles`, { metadata: meta('role-a'), rules });
    await create(`${rbac}/clusterroles`, { metadata: meta(`${run}-cr`), rules });
    const subjects = [
      { kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'User', name: 'bob', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'Group', name: 'devs', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'ServiceAccount', name: 'sa-a', namespace: ns },
    ];
    await create(`${rbac}/namespaces/${ns}/rolebindings`, {
      metadata: meta('rb-a'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'role-a' },
      subjects,
    });
    await create(`${rbac}/clusterrolebindings`, {
      metadata: meta(`${run}-crb`),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${run}-cr` },
      subjects,
    });
    await create(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`, {
      metadata: meta('pdb-min'),
      spec: { minAvailable: 2, selector },
    });
    await create(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`, {
      metadata: meta('pdb-max'),
      spec: { maxUnavailable: '50%' },
    });
    await create(`/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`, {
      metadata: meta('np-a'),
      spec: { podSelector: selector },
    });
    await create(`/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`, {
      metadata: meta('np-all'),
      spec: { podSelector: {} },
    });
    const group = `${run}.example.com`;
    const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } };
    await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      metadata: meta(`gadgets.${group}`),
      spec: {
        group,
        names: { plural: 'gadgets', kind: 'Gadget', shortNames: ['gd', 'gdg'] },
        scope: 'Namespaced',
        versions: [
          { name: 'v1', served: true, storage: true, schema },
          { name: 'v1beta1', served: true, storage: false, schema },
          { name: 'v1alpha1', served: false, storage: false, schema },
        ],
      },
    });
    // Ingresses, IngressClasses, PersistentVolumes and claims, HorizontalPodAutoscalers.
    const net = `/apis/networking.k8s.io/v1`;
    await create(`${net}/namespaces/${ns}/ingresses`, {
      metadata: meta('ing-a'),
      spec: {
        ingressClassName: 'nginx',
        tls: [{ hosts: ['a.example.com'], secretName: 'sec-tls' }],
        rules: [
          { host: 'a.example.com' },
          { host: 'b.example.com' },
          {},
          { host: 'c.example.com' },
          { host: 'd.example.com' },
        ],
      },
    });
    await status(`${net}/namespaces/${ns}/ingresses/ing-a`, {
      loadBalancer: {
        ingress: [
          { ip: '10.9.9.9' },
          { hostname: 'a-very-long-load-balancer.example.com' },
          { ip: '10.1.1.1' },
        ],
      },
    });
    await create(`${net}/namespaces/${ns}/ingresses`, {
      metadata: meta('ing-b'),
      spec: { defaultBackend: { service: { name: 'svc-ip', port: { number: 80 } } } },
    });
    await create(`${net}/ingressclasses`, {
      metadata: meta(`${run}-ic-a`, {
        annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' },
      }),
      spec: {
        controller: 'example.com/ingress',
        parameters: { kind: 'Params', apiGroup: 'example.com', name: 'p', scope: 'Cluster' },
      },
    });
    await create(`${net}/ingressclasses`, {
      metadata: meta(`${run}-ic-b`),
      spec: {
        controller: 'example.com/other',
        parameters: { kind: 'ConfigMap', name: 'cm-a', scope: 'Namespace', namespace: ns },
      },
    });
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
    const columns = [
      { name: 'Str', type: 'string', jsonPath: '.spec.str' },
      { name: 'Replicas', type: 'integer', format: 'int32', jsonPath: '.spec.replicas' },
      { name: 'Ratio', type: 'number', description: 'how much', jsonPath: '.spec.ratio' },
      { name: 'Enabled', type: 'boolean', jsonPath: '.spec.enabled' },
      { name: 'Seen', type: 'date', jsonPath: '.status.lastSeen' },
      { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      { name: 'Tags', type: 'string', priority: 1, jsonPath: '.spec.tags' },
      { name: 'First', type: 'string', priority: 1, jsonPath: '.spec.tags[0]' },
      { name: 'Map', type: 'string', priority: 1, jsonPath: '.spec.map' },
      { name: 'Nothing', type: 'string', jsonPath: '.spec.nothing' },
      { name: 'Label', type: 'string', jsonPath: ".metadata.labels['app']" },
    ];
    await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      metadata: meta(`widgets.${group}`),
      spec: {
        group,
        names: { plural: 'widgets', kind: 'Widget' },
        scope: 'Namespaced',
        versions: [{ name: 'v1', served: true, storage: true, schema, additionalPrinterColumns: columns }],
      },
    });
    await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      metadata: meta(`plainthings.${group}`),
      spec: {
        group,
        names: { plural: 'plainthings', kind: 'PlainThing' },
        scope: 'Cluster',
        versions: [{ name: 'v1', served: true, storage: true, schema }],
      },
    });
    await eventually('the custom resources served', 30_000, async () => {
      const r = await direct(`/apis/${group}/v1`);
      return r.status === 200 && r.body.includes('"widgets"') && r.body.includes('"plainthings"')
        ? true
        : undefined;
    });
    const W = `/apis/${group}/v1/namespaces/${ns}/widgets`;
    const widget = (name: string, spec: unknown, st?: unknown) => ({
      apiVersion: `${group}/v1`,
      kind: 'Widget',
      metadata: meta(name),
      spec,
      ...(st !== undefined ? { status: st } : {}),
    });
    await create(
      W,
      widget(
        'w-full',
        {
          str: 'hello <world>',
          replicas: 3,
          ratio: 0.25,
          enabled: true,
          tags: ['a', 'b'],
          map: { z: 1, a: 'x' },
          nothing: null,
        },
        {
          lastSeen: ago(3700),
          conditions: [
            { type: 'Synced', status: 'True' },
            { type: 'Ready', status: 'False' },
          ],
        },
      ),
    );
    await create(W, widget('w-empty', {}));
    await create(
      W,
      widget(
        'w-odd',
        { str: 7, replicas: 2.5, ratio: 4, enabled: 'yes', tags: [], map: [] },
        { lastSeen: 'not a date', conditions: 'none' },
      ),
    );
    await create(
      W,
      widget(
        'w-zero',
        { str: '', replicas: -1, ratio: 1e-7, enabled: false },
        { lastSeen: '0001-01-01T00:00:00Z' },
      ),
    );
    for (const n of ['pt-a', 'pt-b'])
      await create(`/apis/${group}/v1/plainthings`, {
        apiVersion: `${group}/v1`,
        kind: 'PlainThing',
        metadata: meta(`${run}-${n}`),
      });
    const resources = KINDS.map(([, k]) => k).join(',');
    proxy = await startProxy(f, { resources });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
    await f?.kubectl([
      '-n',
      ns,
      'patch',
      'pod',
      'p-term',
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    ]);
    for (const n of [`${run}-n1`, `${run}-n2`]) await f?.kubectl(['delete', 'node', n, '--wait=false']);
    for (const n of ['pv-a', 'pv-b']) await f?.kubectl(['delete', 'pv', `${run}-${n}`, '--wait=false']);
    for (const n of ['ic-a', 'ic-b'])
      await f?.kubectl(['delete', 'ingressclass', `${run}-${n}`, '--wait=false']);
    for (const c of ['gadgets', 'widgets', 'plainthings'])
      await f?.kubectl(['delete', 'crd', `${c}.${run}.example.com`, '--wait=false']);
  });

  test('Table JSON of LIST (includeObject Metadata, None, Object; v1beta1) and GET: equal to the apiserver, from the cache', async () => {
    for (const [p] of KINDS) {
      const base = `${path(p)}?labelSelector=${encodeURIComponent(sel)}`;
      for (const [q, accept] of [
        ['', TABLE],
        ['&includeObject=None', TABLE],
        ['&includeObject=Object', TABLE],
        ['&includeObject=Metadata', KUBECTL],
        ['', 'application/json;as=Table;v=v1beta1;g=meta.k8s.io'],
      ] as const) {
        const want = await direct(`${base}${q}`, accept);
        const got = await via(`${base}${q}`, accept);
        assert.equal(want.status, 200, `${p}${q}: ${want.body}`);
        assert.equal(got.status, 200, `${p}${q}: ${got.body}`);
        assert.ok(got.fromCache, `${p}${q}: from the cache`);
        assert.deepEqual(masked(got.body), masked(want.body), `${p}${q}`);
        const rows = (JSON.parse(want.body) as { rows: unknown[] | null }).rows;
        assert.ok(rows && rows.length > 0, `${p}: some objects`);
      }
      // An empty list: `[]` or `null` as the apiserver's printer writes it.
      const none = `${path(p)}?labelSelector=t32%3Dnothing`;
      assert.deepEqual(
        masked((await via(none, TABLE)).body),
        masked((await direct(none, TABLE)).body),
        `${p} empty`,
      );
      // GET of each object, every includeObject.
      const names = (
        JSON.parse((await direct(base, TABLE)).body) as { rows: { object: { metadata: { name: string } } }[] }
      ).rows.map((r) => r.object.metadata.name);
      for (const name of names) {
        for (const q of ['', '?includeObject=Object', '?includeObject=None']) {
          const one = `${path(p)}/${name}${q}`;
          const want = await direct(one, TABLE);
          const got = await via(one, TABLE);
          assert.equal(got.status, 200, `${one}: ${got.body}`);
          assert.ok(got.fromCache, `${one}: from the cache`);
          assert.deepEqual(masked(got.body), masked(want.body), one);
          assert.equal(got.body.endsWith('}\n'), want.body.endsWith('}\n'), `${one}: newline`);
        }
      }
    }
  });

  test('paged Table LISTs (limit, continue, remainingItemCount) page like the apiserver', async () => {
    for (const [p] of KINDS.filter(([k]) => k.startsWith('ns:'))) {
      const pages = async (get: (u: string) => Promise<Answer>) => {
        const out: unknown[] = [];
        let cont = '';
        for (let i = 0; i < 20; i++) {
          const a = await get(`${path(p)}?limit=2${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
          assert.equal(a.status, 200, a.body);
          out.push(masked(a.body));
          cont = (JSON.parse(a.body) as { metadata: { continue?: string } }).metadata.continue ?? '';
          if (!cont) return out;
        }
        assert.fail('too many pages');
      };
      assert.deepEqual(await pages((u) => via(u, TABLE)), await pages((u) => direct(u, TABLE)), p);
    }
  });

  test('kubectl get, -o wide, --show-labels, -L, --sort-by print the same through the proxy', {
    timeout: 1_200_000,
  }, async () => {
    // Forwarded for the request's form (not for the cache's state: a quiet resource's stream may
    // be unproven live at a consistent read, `not-live`, as for any read).
    const upstream = async (resource: string) => {
      const r = await request(`${proxy.ops}/metrics`);
      const m = parsePrometheus(await r.body.text());
      let n = 0;
      for (const reason of ['table-printer', 'media-type', 'unknown-parameter', 'pretty'])
        n += sum(m, 'kube_cache_proxy_requests_total', { resource, served_from: 'upstream', reason });
      return n;
    };
    const cached = async (resource: string) => {
      const r = await request(`${proxy.ops}/metrics`);
      return sum(parsePrometheus(await r.body.text()), 'kube_cache_proxy_requests_total', {
        resource,
        served_from: 'cache',
      });
    };
    for (const [p, kind] of KINDS) {
      const resource = kind.split('.')[0]!;
      const before = await upstream(resource);
      const fromCache = await cached(resource);
      const scope = p.startsWith('ns:') ? ['-n', ns] : [];
      for (const extra of [
        [],
        ['-o', 'wide'],
        ['--show-labels'],
        ['-L', 'app,t32'],
        ['--sort-by=.metadata.name', '-o', 'wide'],
      ]) {
        const args = ['get', kind, ...scope, '-l', sel, ...extra];
        // Side by side at once: ~300 kubectl runs, on 2 shared cores.
        const [want, got] = await Promise.all([
          f.kubectl(args),
          f.kubectl(args, { kubeconfig: proxy.kubeconfig }),
        ]);
        assert.equal(want.code, 0, want.stderr);
        assert.equal(got.code, 0, got.stderr);
        assert.deepEqual(printed(got.stdout), printed(want.stdout), `kubectl ${args.join(' ')}`);
      }
      assert.equal(await upstream(resource), before, `kubectl get ${kind}: no Table forwarded for its form`);
      // The apiserver keeps no watch cache for events (DefaultWatchCacheSizes: 0), so it sends the
      // events stream no bookmarks, and a quiet events cache cannot prove its stream live at a
      // consistent read: `not-live`, as for a plain LIST (the Table JSON test reads them fresh).
      if (resource !== 'events')
        assert.ok((await cached(resource)) > fromCache, `kubectl get ${kind}: Tables from the cache`);
    }
  });

  test('a Table watch: the same events as the apiserver (columns in the first only); kubectl get -w the same lines', async () => {
    const watch = async (base: string, collection = `/api/v1/namespaces/${ns}/configmaps`) => {
      const ctl = new AbortController();
      const r = await request(`${base}${collection}?watch=1&labelSelector=${encodeURIComponent(sel)}`, {
        dispatcher: agent,
        headers: { ...auth, accept: TABLE },
        signal: ctl.signal,
      });
      const lines: unknown[] = [];
      let buf = '';
      const done = (async () => {
        try {
          for await (const chunk of r.body) {
            buf += chunk.toString();
            for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
              const ev = JSON.parse(buf.slice(0, i)) as { type: string; object: unknown };
              lines.push({ type: ev.type, object: masked(JSON.stringify(ev.object)) });
              buf = buf.slice(i + 1);
            }
          }
        } catch {}
      })();
      return {
        lines,
        stop: async () => {
          ctl.abort();
          await done;
        },
        fromCache: r.headers['audit-id'] === undefined,
      };
    };
    const d = await watch(f.server);
    const v = await watch(proxy.url);
    assert.ok(v.fromCache, 'watch from the cache');
    await eventually('initial events', 20_000, async () =>
      d.lines.length >= 2 && v.lines.length >= 2 ? true : undefined,
    );
    await create(`/api/v1/namespaces/${ns}/configmaps`, { metadata: meta('cm-new'), data: { x: 'y' } });
    await eventually('the new one', 20_000, async () =>
      d.lines.length >= 3 && v.lines.length >= 3 ? true : undefined,
    );
    await d.stop();
    await v.stop();
    assert.deepEqual(v.lines, d.lines);
    const first = d.lines[0] as { object: { columnDefinitions: unknown } };
    const second = d.lines[1] as { object: { columnDefinitions: unknown } };
    assert.ok(Array.isArray(first.object.columnDefinitions) && second.object.columnDefinitions === null);

    // kubectl get -w: its LIST then its watch, both Tables.
    const kw = (kubeconfig: string) => {
      const c = spawn(
        f.bin.kubectl,
        ['--kubeconfig', kubeconfig, '-n', ns, 'get', 'configmaps', '-l', sel, '-w'],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      c.stdout.on('data', (b: Buffer) => {
        out += b.toString();
      });
      return { out: () => out, stop: () => c.kill() };
    };
    const kd = kw(f.kubeconfigs.adminToken);
    const kv = kw(proxy.kubeconfig);
    await eventually('kubectl -w lists', 20_000, async () =>
      printed(kd.out()).length >= 4 && printed(kv.out()).length >= 4 ? true : undefined,
    );
    await create(`/api/v1/namespaces/${ns}/configmaps`, { metadata: meta('cm-newer') });
    await eventually('kubectl -w sees the new one', 20_000, async () =>
      kd.out().includes('cm-newer') && kv.out().includes('cm-newer') ? true : undefined,
    );
    kd.stop();
    kv.stop();
    assert.deepEqual(printed(kv.out()), printed(kd.out()));

    // A custom resource's Table watch: its CRD's columns in the first event only.
    const widgets = `/apis/${run}.example.com/v1/namespaces/${ns}/widgets`;
    const wd = await watch(f.server, widgets);
    const wv = await watch(proxy.url, widgets);
    assert.ok(wv.fromCache, 'widgets watch from the cache');
    await eventually('initial widgets', 20_000, async () =>
      wd.lines.length >= 4 && wv.lines.length >= 4 ? true : undefined,
    );
    await create(widgets, {
      apiVersion: `${run}.example.com/v1`,
      kind: 'Widget',
      metadata: meta('w-new'),
      spec: { str: 'new', replicas: 1, tags: ['x'] },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    });
    await eventually('the new widget', 20_000, async () =>
      wd.lines.length >= 5 && wv.lines.length >= 5 ? true : undefined,
    );
    await wd.stop();
    await wv.stop();
    assert.deepEqual(wv.lines, wd.lines);
    const cols = (wd.lines as { object: { columnDefinitions: unknown[] | null } }[]).map(
      (l) => l.object.columnDefinitions?.length ?? null,
    );
    assert.deepEqual(cols, [12, null, null, null, null]);
  });

  test('a Table LIST from the cache does not send the next plain LIST upstream', async () => {
    const metric = async (labels: Record<string, string>) => {
      const r = await request(`${proxy.ops}/metrics`);
      return sum(parsePrometheus(await r.body.text()), 'kube_cache_proxy_requests_total', labels);
    };
    const list = `/api/v1/namespaces/${ns}/configmaps`;
    const before = await metric({ resource: 'configmaps', served_from: 'upstream' });
    for (let i = 0; i < 3; i++) {
      const t = await via(list, KUBECTL);
      assert.ok(t.fromCache, 'the Table from the cache');
      const plain = await via(list, 'application/json');
      assert.equal(plain.status, 200);
      assert.ok(plain.fromCache, 'the next plain LIST from the cache too');
    }
    assert.equal(
      await metric({ resource: 'configmaps', served_from: 'upstream' }),
      before,
      'nothing upstream',
    );
    assert.equal(await metric({ reason: 'behind-upstream' }), 0);
  });
});
