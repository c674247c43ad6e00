/**
 * The workload's final state, object for object, in a form two runs on fresh fixtures can be
 * compared in: every object of the kinds the workload touches in its namespaces (and the nodes),
 * with what differs between two clusters by construction normalised: uids, resourceVersions,
 * timestamps, managedFields, generated names (`generateName` + a random suffix; the
 * ServiceAccount admission plugin's `kube-api-access-xxxxx` volume), pod and Service
 * IPs, the KWOK node a scheduler picked among equal ones, and the CA a namespace's
 * `kube-root-ca.crt` carries, and a ReplicaSet's generation (how many resizes a rolling update
 * took depends on when pods became available).
 */
import type { ApiClient } from './api-client.ts';
import { QUOTA_NS, WORK_NS } from './objects.ts';

/** Kind → the normalised objects (sorted JSON lines). */
export type FinalState = Record<string, string[]>;

/** The lists the final state is read from (namespaced ones for each workload namespace). */
const NAMESPACED: Record<string, string> = {
  deployments: '/apis/apps/v1',
  replicasets: '/apis/apps/v1',
  statefulsets: '/apis/apps/v1',
  daemonsets: '/apis/apps/v1',
  controllerrevisions: '/apis/apps/v1',
  jobs: '/apis/batch/v1',
  cronjobs: '/apis/batch/v1',
  poddisruptionbudgets: '/apis/policy/v1',
  pods: '/api/v1',
  services: '/api/v1',
  serviceaccounts: '/api/v1',
  configmaps: '/api/v1',
  resourcequotas: '/api/v1',
};

const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const UID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const DROP = new Set(['uid', 'resourceVersion', 'creationTimestamp', 'managedFields', 'selfLink']);
const IPS = new Set(['podIP', 'podIPs', 'clusterIP', 'clusterIPs', 'ip']);

/** `v` with the cluster-specific values replaced (see the file comment); `generated` maps names. */
export function normalise(v: unknown, generated: Map<string, string>): unknown {
  if (typeof v === 'string') {
    if (TIME.test(v)) return '<time>';
    const g = generated.get(v);
    if (g) return g;
    if (/^kwok-node-\d+$/.test(v)) return 'kwok-node-<n>';
    if (/^kube-api-access-[a-z0-9]{5}$/.test(v)) return 'kube-api-access-<generated>';
    return v.replace(UID, '<uid>');
  }
  if (Array.isArray(v)) return v.map((x) => normalise(x, generated));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (DROP.has(k)) continue;
      out[k] = IPS.has(k) ? '<ip>' : normalise(x, generated);
    }
    return out;
  }
  return v;
}

// biome-ignore lint/suspicious/noExplicitAny: Kubernetes objects.
type Obj = any;

function generatedNames(objs: Obj[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const o of objs) {
    const g = o.metadata?.generateName;
    if (g && o.metadata.name.startsWith(g)) m.set(o.metadata.name, `${g}<generated>`);
  }
  return m;
}

/** Reads and normalises the final state of the workload through `api` (the apiserver). */
export async function finalState(api: ApiClient): Promise<FinalState> {
  const raw: Record<string, Obj[]> = {};
  for (const [resource, base] of Object.entries(NAMESPACED)) {
    raw[resource] = [];
    for (const ns of [WORK_NS, QUOTA_NS]) {
      const l = await api.get(`${base}/namespaces/${ns}/${resource}`);
      raw[resource].push(...l.items);
    }
  }
  raw.nodes = (await api.get('/api/v1/nodes')).items;
  raw.namespaces = (await api.get('/api/v1/namespaces')).items.filter((n: Obj) =>
    n.metadata.name.startsWith('cp-'),
  );
  for (const cm of raw.configmaps ?? [])
    if (cm.metadata.name === 'kube-root-ca.crt') cm.data = '<the fixture CA>';
  // A node's heartbeat-driven fields (kwok's and the node lifecycle controller's) are not the
  // workload's: keep what the workload decided (its conditions' types and statuses, taints, labels).
  raw.nodes = (raw.nodes ?? []).map((n: Obj) => ({
    metadata: { name: n.metadata.name, labels: n.metadata.labels },
    spec: { taints: n.spec.taints?.map((t: Obj) => ({ key: t.key, effect: t.effect })) },
    status: { conditions: n.status?.conditions?.map((c: Obj) => `${c.type}=${c.status}`) },
  }));
  // How many times the deployment controller resized a ReplicaSet during a rolling update depends
  // on how many pods became available between two of its syncs: timing, not the workload.
  for (const rs of raw.replicasets ?? []) {
    rs.metadata.generation = '<controller-driven>';
    if (rs.status) rs.status.observedGeneration = '<controller-driven>';
  }
  const generated = generatedNames(Object.values(raw).flat());
  const out: FinalState = {};
  for (const [kind, objs] of Object.entries(raw)) {
    out[kind] = objs.map((o) => JSON.stringify(normalise(o, generated))).sort();
  }
  return out;
}

/** One difference between two final states. */
export interface StateDifference {
  kind: string;
  /** Objects (normalised JSON) only the first state has, only the second has. */
  onlyFirst: string[];
  onlySecond: string[];
}

/** The kinds whose normalised objects differ between `a` and `b` (empty: equal). */
export function compareStates(a: FinalState, b: FinalState): StateDifference[] {
  const out: StateDifference[] = [];
  for (const kind of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[kind] ?? [];
    const y = b[kind] ?? [];
    const onlyFirst = x.filter((o) => !y.includes(o));
    const onlySecond = y.filter((o) => !x.includes(o));
    if (onlyFirst.length + onlySecond.length + Math.abs(x.length - y.length) > 0)
      out.push({ kind, onlyFirst, onlySecond });
  }
  return out;
}
