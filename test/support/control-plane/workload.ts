/**
 * The scripted control-plane workload (docs/testing.md "The control-plane workload"): what a user
 * does to a cluster whose kube-controller-manager and kube-scheduler may run through the proxy,
 * step by step, each step ending when the controllers have finished it (conditions polled, never
 * a fixed sleep). The driver itself talks to the apiserver directly (kubectl and the admin's
 * client), so the two runs differ only in the components' server. Used by
 * test/e2e/control-plane.test.ts and bench/tools/control-plane.ts.
 */
import type { Kubectl } from '../../fixture/index.ts';
import type { ApiAnswer, ApiClient } from './api-client.ts';
import {
  DOOMED_NS,
  deployment,
  list,
  MANUAL_NODE,
  manyKinds,
  QUOTA_NS,
  template,
  WORK_NS,
} from './objects.ts';

/** What a step needs. */
export interface WorkloadContext {
  api: ApiClient;
  /** kubectl as the fixture admin, to the apiserver. */
  kubectl: Kubectl;
  /** The KWOK nodes (the DaemonSet's). */
  kwokNodes: string[];
  /** Longest wait for one condition, ms (a bound for a hang). */
  waitMs: number;
}

/** One step of the workload. */
export interface WorkloadStep {
  name: string;
  run(c: WorkloadContext): Promise<void>;
}

/** One step's wall time, ms. */
export interface StepTime {
  step: string;
  ms: number;
}

/** Polls `check` every 250 ms until it holds; throws naming `what` after `c.waitMs`. */
export async function waitFor(
  c: WorkloadContext,
  what: string,
  check: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + c.waitMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`workload: ${what} not within ${c.waitMs} ms${last ? `: ${last}` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function apply(c: WorkloadContext, items: unknown[]): Promise<void> {
  const r = await c.kubectl(['apply', '-f', '-'], { input: list(items) });
  if (r.code !== 0) throw new Error(`workload: kubectl apply: ${r.stderr}`);
}

async function patch(c: WorkloadContext, path: string, body: unknown, sub = ''): Promise<void> {
  const a = await c.api.call('PATCH', `${path}${sub}`, body, 'application/merge-patch+json');
  if (a.status !== 200)
    throw new Error(`workload: PATCH ${path}${sub}: ${a.status} ${JSON.stringify(a.body)}`);
}

const gone = async (c: WorkloadContext, path: string) => (await c.api.call('GET', path)).status === 404;
const items = async (c: WorkloadContext, path: string) =>
  (await c.api.get(path)).items as ApiAnswer['body'][];

const apps = (ns: string, r: string, name = '') =>
  `/apis/apps/v1/namespaces/${ns}/${r}${name ? `/${name}` : ''}`;
const core = (ns: string, r: string, name = '') => `/api/v1/namespaces/${ns}/${r}${name ? `/${name}` : ''}`;
const batch = (ns: string, r: string, name = '') =>
  `/apis/batch/v1/namespaces/${ns}/${r}${name ? `/${name}` : ''}`;

/**
 * What a rollout ends at: the object at `path` (its API path) whose `status` counters `fields`
 * all reach `n`; with `app`, the pods labelled `app=<app>` in `ns` are counted too.
 */
interface RolloutTarget {
  path: string;
  fields: string[];
  n: number;
  ns: string;
  app?: string;
}

/**
 * A workload object has rolled out to `o.n`: its controller observed its generation, each of its
 * `status` counters in `o.fields` is `o.n` (absent counts as 0), and with `o.app` exactly `o.n`
 * pods carry that label (no old pod left).
 */
async function rolledOutTo(c: WorkloadContext, o: RolloutTarget): Promise<boolean> {
  const obj = await c.api.get(o.path);
  const s = obj.status ?? {};
  if (s.observedGeneration !== obj.metadata.generation) return false;
  if (!o.fields.every((f) => (s[f] ?? 0) === o.n)) return false;
  if (o.app === undefined) return true;
  return (await items(c, `${core(o.ns, 'pods')}?labelSelector=app%3D${o.app}`)).length === o.n;
}

/** Waits until {@link rolledOutTo} holds, naming `what` on a timeout. */
async function waitRolledOut(c: WorkloadContext, what: string, o: RolloutTarget): Promise<void> {
  await waitFor(c, `${what} rolled out at ${o.n}`, () => rolledOutTo(c, o));
}

const DEPLOYMENT_COUNTERS = ['replicas', 'updatedReplicas', 'availableReplicas', 'readyReplicas'];
const STATEFULSET_COUNTERS = ['replicas', 'readyReplicas', 'availableReplicas'];
const DAEMONSET_COUNTERS = [
  'desiredNumberScheduled',
  'numberReady',
  'numberAvailable',
  'updatedNumberScheduled',
];

async function deploymentReady(c: WorkloadContext, ns: string, name: string, replicas: number) {
  await waitRolledOut(c, `deployment ${ns}/${name}`, {
    path: apps(ns, 'deployments', name),
    fields: DEPLOYMENT_COUNTERS,
    n: replicas,
    ns,
    app: name,
  });
}

async function scale(c: WorkloadContext, ns: string, name: string, replicas: number) {
  await patch(c, apps(ns, 'deployments', name), { spec: { replicas } });
  await deploymentReady(c, ns, name, replicas);
}

async function rollout(c: WorkloadContext, rev: string) {
  await patch(c, apps(WORK_NS, 'deployments', 'web'), {
    spec: { template: { metadata: { annotations: { 'kcp.test/rev': rev } } } },
  });
  await deploymentReady(c, WORK_NS, 'web', 5);
  await waitFor(c, `old ReplicaSets of web scaled to 0 (rollout ${rev})`, async () => {
    const rss = await items(c, `${apps(WORK_NS, 'replicasets')}?labelSelector=app%3Dweb`);
    const old = rss.filter(
      (r) => r.metadata.annotations?.['deployment.kubernetes.io/revision'] !== String(Number(rev) + 1),
    );
    return (
      old.length === Number(rev) && old.every((r) => r.spec.replicas === 0 && (r.status.replicas ?? 0) === 0)
    );
  });
}

/** The steps in order, highest value first (docs/testing.md lists them). */
export const STEPS: WorkloadStep[] = [
  {
    name: 'deployment-create-scale-50',
    async run(c) {
      await apply(c, [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WORK_NS } },
        deployment(WORK_NS, 'web', 0),
      ]);
      await deploymentReady(c, WORK_NS, 'web', 0);
      await scale(c, WORK_NS, 'web', 50);
    },
  },
  { name: 'deployment-scale-5', run: (c) => scale(c, WORK_NS, 'web', 5) },
  { name: 'deployment-rollout-1', run: (c) => rollout(c, '1') },
  { name: 'deployment-rollout-2', run: (c) => rollout(c, '2') },
  {
    name: 'cascade-foreground',
    async run(c) {
      await apply(c, [deployment(WORK_NS, 'fg', 3)]);
      await deploymentReady(c, WORK_NS, 'fg', 3);
      const a = await c.api.call('DELETE', apps(WORK_NS, 'deployments', 'fg'), {
        propagationPolicy: 'Foreground',
      });
      if (a.status !== 200 && a.status !== 202) throw new Error(`workload: delete fg: ${a.status}`);
      await waitFor(c, 'foreground delete of fg finished', async () => {
        if (!(await gone(c, apps(WORK_NS, 'deployments', 'fg')))) return false;
        const rss = await items(c, `${apps(WORK_NS, 'replicasets')}?labelSelector=app%3Dfg`);
        const pods = await items(c, `${core(WORK_NS, 'pods')}?labelSelector=app%3Dfg`);
        return rss.length === 0 && pods.length === 0;
      });
    },
  },
  {
    name: 'cascade-orphan',
    async run(c) {
      await apply(c, [deployment(WORK_NS, 'orphan', 3)]);
      await deploymentReady(c, WORK_NS, 'orphan', 3);
      const a = await c.api.call('DELETE', apps(WORK_NS, 'deployments', 'orphan'), {
        propagationPolicy: 'Orphan',
      });
      if (a.status !== 200 && a.status !== 202) throw new Error(`workload: delete orphan: ${a.status}`);
      await waitFor(c, 'orphaning delete of orphan finished', async () => {
        if (!(await gone(c, apps(WORK_NS, 'deployments', 'orphan')))) return false;
        const rss = await items(c, `${apps(WORK_NS, 'replicasets')}?labelSelector=app%3Dorphan`);
        const pods = await items(c, `${core(WORK_NS, 'pods')}?labelSelector=app%3Dorphan`);
        return rss.length === 1 && !rss[0].metadata.ownerReferences?.length && pods.length === 3;
      });
    },
  },
  {
    name: 'namespace-delete',
    async run(c) {
      await apply(c, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: DOOMED_NS } }]);
      await waitFor(
        c,
        `ServiceAccount ${DOOMED_NS}/default`,
        async () => !(await gone(c, core(DOOMED_NS, 'serviceaccounts', 'default'))),
      );
      await apply(c, manyKinds(DOOMED_NS));
      // The controllers have acted on what they own before the namespace goes.
      await deploymentReady(c, DOOMED_NS, 'dep', 2);
      await waitFor(c, `${DOOMED_NS}: StatefulSet, DaemonSet and RC pods running`, async () => {
        const pods = await items(c, core(DOOMED_NS, 'pods'));
        const running = (app: string) =>
          pods.filter((p) => p.metadata.labels?.app === app && p.status.phase === 'Running').length;
        return running('sts') === 1 && running('ds') === c.kwokNodes.length && running('rc') === 1;
      });
      const a = await c.api.call('DELETE', `/api/v1/namespaces/${DOOMED_NS}`);
      if (a.status !== 200 && a.status !== 202) throw new Error(`workload: delete namespace: ${a.status}`);
      await waitFor(c, `namespace ${DOOMED_NS} finalized and gone`, () =>
        gone(c, `/api/v1/namespaces/${DOOMED_NS}`),
      );
    },
  },
  {
    name: 'resource-quota',
    async run(c) {
      await apply(c, [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: QUOTA_NS } },
        {
          apiVersion: 'v1',
          kind: 'ResourceQuota',
          metadata: { name: 'pods', namespace: QUOTA_NS },
          spec: { hard: { pods: '2' } },
        },
      ]);
      await waitFor(
        c,
        `ServiceAccount ${QUOTA_NS}/default`,
        async () => !(await gone(c, core(QUOTA_NS, 'serviceaccounts', 'default'))),
      );
      await waitFor(c, 'quota status written by the resourcequota controller', async () => {
        const q = await c.api.get(core(QUOTA_NS, 'resourcequotas', 'pods'));
        return q.status?.hard?.pods === '2' && q.status?.used?.pods === '0';
      });
      const pod = (name: string) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: QUOTA_NS, labels: { app: 'quota' } },
        spec: template('quota').spec,
      });
      for (const name of ['q1', 'q2']) {
        const a = await c.api.call('POST', core(QUOTA_NS, 'pods'), pod(name));
        if (a.status !== 201) throw new Error(`workload: pod ${name}: ${a.status} ${JSON.stringify(a.body)}`);
      }
      const refused = await c.api.call('POST', core(QUOTA_NS, 'pods'), pod('q3'));
      if (refused.status !== 403 || !/exceeded quota: pods/.test(refused.body?.message ?? ''))
        throw new Error(
          `workload: a third pod was not refused by the quota: ${refused.status} ${JSON.stringify(refused.body)}`,
        );
      await waitFor(
        c,
        'quota used pods=2',
        async () => (await c.api.get(core(QUOTA_NS, 'resourcequotas', 'pods'))).status?.used?.pods === '2',
      );
    },
  },
  {
    name: 'pdb-blocks-eviction',
    async run(c) {
      await apply(c, [
        deployment(WORK_NS, 'guarded', 2),
        {
          apiVersion: 'policy/v1',
          kind: 'PodDisruptionBudget',
          metadata: { name: 'guarded', namespace: WORK_NS },
          spec: { minAvailable: 2, selector: { matchLabels: { app: 'guarded' } } },
        },
      ]);
      await deploymentReady(c, WORK_NS, 'guarded', 2);
      const pdb = `/apis/policy/v1/namespaces/${WORK_NS}/poddisruptionbudgets/guarded`;
      await waitFor(c, 'PDB status written by the disruption controller', async () => {
        const s = (await c.api.get(pdb)).status ?? {};
        return (
          s.observedGeneration === 1 &&
          s.currentHealthy === 2 &&
          s.desiredHealthy === 2 &&
          s.disruptionsAllowed === 0
        );
      });
      const [victim] = await items(c, `${core(WORK_NS, 'pods')}?labelSelector=app%3Dguarded`);
      const name = victim.metadata.name;
      const e = await c.api.call('POST', core(WORK_NS, 'pods', `${name}/eviction`), {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name, namespace: WORK_NS },
      });
      if (e.status !== 429 || !/violate the pod's disruption budget/.test(e.body?.message ?? ''))
        throw new Error(`workload: eviction not blocked by the PDB: ${e.status} ${JSON.stringify(e.body)}`);
    },
  },
  {
    name: 'node-not-ready-eviction',
    async run(c) {
      const node = `/api/v1/nodes/${MANUAL_NODE}`;
      await apply(c, [
        {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name: MANUAL_NODE, labels: { type: 'manual' } },
          spec: { taints: [{ key: 'kcp.test/manual', effect: 'NoSchedule' }] },
        },
      ]);
      const ready = (status: 'True' | 'False') => ({
        status: {
          conditions: [
            {
              type: 'Ready',
              status,
              reason: 'Workload',
              message: 'set by the workload',
              lastHeartbeatTime: new Date().toISOString(),
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      });
      await patch(c, node, ready('True'), '/status');
      // The node lifecycle controller has seen it Ready once it lifts the not-ready NoSchedule taint.
      await waitFor(c, `${MANUAL_NODE} seen Ready`, async () => {
        const n = await c.api.get(node);
        return !n.spec.taints?.some((t: { key: string }) => t.key.startsWith('node.kubernetes.io/'));
      });
      for (const name of ['evictee-1', 'evictee-2']) {
        const spec = { ...template('evictee').spec, nodeName: MANUAL_NODE, nodeSelector: undefined };
        const a = await c.api.call('POST', core(WORK_NS, 'pods'), {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name, namespace: WORK_NS, labels: { app: 'evictee' } },
          spec,
        });
        if (a.status !== 201) throw new Error(`workload: pod ${name}: ${a.status} ${JSON.stringify(a.body)}`);
      }
      await patch(c, node, ready('False'), '/status');
      await waitFor(
        c,
        `pods on ${MANUAL_NODE} evicted (NoExecute not-ready taint, tolerationSeconds 2)`,
        async () => {
          const pods = await items(c, `${core(WORK_NS, 'pods')}?labelSelector=app%3Devictee`);
          return pods.length === 0;
        },
      );
    },
  },
  {
    name: 'job-complete',
    async run(c) {
      await apply(c, [
        {
          apiVersion: 'batch/v1',
          kind: 'Job',
          metadata: { name: 'batch', namespace: WORK_NS },
          spec: {
            completions: 4,
            parallelism: 2,
            template: template('batch', {}, { restartPolicy: 'Never' }),
          },
        },
      ]);
      await waitFor(c, 'job batch Complete', async () => {
        const j = await c.api.get(batch(WORK_NS, 'jobs', 'batch'));
        return (
          j.status?.succeeded === 4 &&
          j.status?.conditions?.some(
            (x: { type: string; status: string }) => x.type === 'Complete' && x.status === 'True',
          )
        );
      });
    },
  },
  {
    // `@every 5s` (robfig/cron, which the CronJob validation and controller use): fires 5 s after
    // creation instead of at the next minute. History limits 0: its finished Jobs are removed, so
    // the final state does not depend on how many times it fired before it was suspended.
    name: 'cronjob-fires',
    async run(c) {
      const path = batch(WORK_NS, 'cronjobs', 'tick');
      await apply(c, [
        {
          apiVersion: 'batch/v1',
          kind: 'CronJob',
          metadata: { name: 'tick', namespace: WORK_NS },
          spec: {
            schedule: '@every 5s',
            concurrencyPolicy: 'Forbid',
            successfulJobsHistoryLimit: 0,
            failedJobsHistoryLimit: 0,
            jobTemplate: { spec: { template: template('tick', {}, { restartPolicy: 'Never' }) } },
          },
        },
      ]);
      await waitFor(c, 'cronjob tick fired and its job succeeded', async () =>
        Boolean((await c.api.get(path)).status?.lastSuccessfulTime),
      );
      await patch(c, path, { spec: { suspend: true } });
      await waitFor(c, 'cronjob tick suspended with no jobs or pods left', async () => {
        const cj = await c.api.get(path);
        const jobs = (await items(c, batch(WORK_NS, 'jobs'))).filter((j) =>
          j.metadata.ownerReferences?.some((o: { name: string }) => o.name === 'tick'),
        );
        const pods = await items(c, `${core(WORK_NS, 'pods')}?labelSelector=app%3Dtick`);
        return !cj.status?.active?.length && jobs.length === 0 && pods.length === 0;
      });
    },
  },
  {
    name: 'statefulset-scale',
    async run(c) {
      const path = apps(WORK_NS, 'statefulsets', 'db');
      await apply(c, [
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'db', namespace: WORK_NS },
          spec: { clusterIP: 'None', selector: { app: 'db' }, ports: [{ port: 5432 }] },
        },
        {
          apiVersion: 'apps/v1',
          kind: 'StatefulSet',
          metadata: { name: 'db', namespace: WORK_NS },
          spec: {
            replicas: 3,
            serviceName: 'db',
            selector: { matchLabels: { app: 'db' } },
            template: template('db'),
          },
        },
      ]);
      const at = (n: number) =>
        waitRolledOut(c, 'statefulset db', { path, fields: STATEFULSET_COUNTERS, n, ns: WORK_NS, app: 'db' });
      await at(3);
      await patch(c, path, { spec: { replicas: 1 } });
      await at(1);
    },
  },
  {
    name: 'daemonset-3-nodes',
    async run(c) {
      const path = apps(WORK_NS, 'daemonsets', 'agent');
      await apply(c, [
        {
          apiVersion: 'apps/v1',
          kind: 'DaemonSet',
          metadata: { name: 'agent', namespace: WORK_NS },
          spec: { selector: { matchLabels: { app: 'agent' } }, template: template('agent') },
        },
      ]);
      await waitRolledOut(c, `daemonset agent on ${c.kwokNodes.length} nodes`, {
        path,
        fields: DAEMONSET_COUNTERS,
        n: c.kwokNodes.length,
        ns: WORK_NS,
      });
    },
  },
];

/**
 * Runs `steps` (default all) in order, timing each. `onStep` is told before each starts (a bench
 * samples counters there). Throws the first step's error, naming the step.
 */
export async function runWorkload(
  c: WorkloadContext,
  steps: WorkloadStep[] = STEPS,
  onStep?: (name: string) => Promise<void> | void,
): Promise<StepTime[]> {
  const times: StepTime[] = [];
  for (const s of steps) {
    await onStep?.(s.name);
    const t0 = performance.now();
    try {
      await s.run(c);
    } catch (err) {
      throw new Error(`workload step ${s.name}: ${err instanceof Error ? err.message : err}`);
    }
    times.push({ step: s.name, ms: Math.round(performance.now() - t0) });
  }
  return times;
}
