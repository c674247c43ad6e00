/**
 * The node-local rows (issue 13): K simulated nodes (plain Node objects, `podsPerNode` pods bound
 * to each with spec.nodeName, no kubelet), `agentsPerNode` agent-shaped clients per node
 * (bench/workers/agent-worker.ts: LIST then WATCH, like one client-go informer per resource), each
 * list-watching the same 3 resources: the pods of its node (`fieldSelector=spec.nodeName=X`),
 * every Service, every EndpointSlice. Three rows, one after the other on one fixture:
 *
 * - `direct`: the agents talk to the apiserver: K × agents × 3 watches upstream;
 * - `node proxies`: one kube-cache-proxy per node (TLS, `--delegated-auth`, the node-local
 *   DaemonSet's flags: `pods[fieldSelector=spec.nodeName=X],services,endpointslices…`), agents
 *   talk to their node's proxy: K × 3 watches upstream;
 * - `node proxies + pool`: the same node proxies, whose upstream is one pool kube-cache-proxy
 *   (TLS, `--delegated-auth`, caching `pods,services,endpointslices…` unscoped) in front of the
 *   apiserver: 3 watches upstream.
 *
 * Per row, from the start of the first process to the end of a steady window with writes
 * (`writesPerS` pod patches spread over the nodes, one Service patch in 5): the apiserver's WATCH
 * requests in flight (`apiserver_longrunning_requests{verb="WATCH"}`, sampled mid-window), the
 * upstream bytes (a counting TCP relay in front of the apiserver, bench/support/byte-relay.ts, that
 * every upstream client of the row dials), CPU seconds of kube-apiserver (utime+stime from
 * /proc, the same clock as its `process_cpu_seconds_total`) and of etcd, the TokenReviews and
 * SubjectAccessReviews it served, the node proxies' CPU and RSS. Process starts are staggered
 * (proxies one after the other, agents `staggerMs` apart).
 *
 * And the memory row: one node proxy holding a typical node's share (`memory.pods` pods on its
 * node, `memory.services` Services, `memory.endpointSlices` EndpointSlices) vs the same process
 * with an empty cache (bench/support/memory.ts: RSS 2 s after ready and after a forced GC), reported as
 * "idle RSS + N MiB".
 *
 * `node bench/scenarios/node-local.ts [--quick]` runs it alone on its own fixture, writes
 * bench/results/node-local{,-quick}.json and, for a full run, the `node-local` block of
 * docs/benchmarks.md (the shared ending, bench/report/scenario-end.ts); bench/run.ts runs it as
 * one scenario of the whole bench. A row that fails is recorded (bench/support/rows.ts), not thrown.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { createUpstream, type Upstream } from '../../src/upstream/connection.ts';
import { type Fixture, startFixture, writeKubeconfig } from '../../test/fixture/index.ts';
import { parsePrometheus } from '../../test/support/prometheus-text.ts';
import { renderNodeLocal } from '../report/node-local-report.ts';
import type { NodeLocalMemory, NodeLocalParams, NodeLocalResults, NodeLocalRow } from '../report/results.ts';
import { endScenario } from '../report/scenario-end.ts';
import { startByteRelay } from '../support/byte-relay.ts';
import { benchLog } from '../support/log.ts';
import { measureProxy } from '../support/memory.ts';
import { cpuSeconds, pin, round, rssBytes } from '../support/proc.ts';
import { DIST_CLI, type ProxyProcess, startProxy } from '../support/proxy-process.ts';
import { RowFailures } from '../support/rows.ts';
import { fillerText, parallel } from '../support/seed.ts';
import type { AgentResult, AgentSpec } from '../workers/agent-worker.ts';

const MiB = 2 ** 20;
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/** The full run: 20 nodes × 50 pods × 3 agents, 1,000 Services and 1,000 EndpointSlices. */
export const NODE_LOCAL_FULL: NodeLocalParams = {
  nodes: 20,
  podsPerNode: 50,
  agentsPerNode: 3,
  services: 1000,
  endpointSlices: 1000,
  steadyS: 20,
  writesPerS: 10,
  staggerMs: 50,
  memory: { pods: 110, services: 1000, endpointSlices: 1000 },
};

/** `--quick`: 3 nodes, 100 Services and EndpointSlices (the memory row too). */
export const NODE_LOCAL_QUICK: NodeLocalParams = {
  nodes: 3,
  podsPerNode: 50,
  agentsPerNode: 3,
  services: 100,
  endpointSlices: 100,
  steadyS: 4,
  writesPerS: 10,
  staggerMs: 50,
  memory: { pods: 110, services: 100, endpointSlices: 100 },
};

/** CPUs: the apiserver's core (apiserver + etcd alone) and the one for everything else. */
export interface NodeLocalCpus {
  apiserver: string;
  other: string;
}

/** The namespace the rows seed. */
export const NS = 'bench-nl';
const MEM_NS = 'bench-nl-mem';
const MEM_NODE = 'nl-mem-node';
const RESOURCES = ['pods', 'services', 'endpointslices'] as const;
/** Node `i`'s name. */
export const nlNode = (i: number): string => `nl-node-${String(i).padStart(2, '0')}`;
/** The collections an agent of `node` list-watches: its node's pods, every Service, every EndpointSlice. */
export const agentPaths = (node: string): string[] => [
  `/api/v1/pods?fieldSelector=spec.nodeName%3D${node}`,
  '/api/v1/services',
  '/apis/discovery.k8s.io/v1/endpointslices',
];

/** `method path` on `up` with `body` as JSON (or `type`): its status and text; never throws on a status. */
export async function call(
  up: Upstream,
  method: string,
  path: string,
  body?: unknown,
  type = 'application/json',
) {
  const auth = await up.authorization();
  const res = await request(`${up.baseUrl}${path}`, {
    method: method as 'POST',
    dispatcher: up.dispatcher,
    headers: { 'content-type': type, ...(auth ? { authorization: auth } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

async function create(up: Upstream, path: string, body: unknown): Promise<void> {
  const r = await call(up, 'POST', path, body);
  if (r.status !== 201 && r.status !== 409)
    throw new Error(`POST ${path}: ${r.status} ${r.text.slice(0, 300)}`);
}

const pod = (name: string, node: string, i: number) => ({
  metadata: {
    name,
    labels: { app: `app-${i % 20}` },
    annotations: { 'bench.kcp/filler': fillerText(i, 1500) },
  },
  spec: {
    nodeName: node,
    automountServiceAccountToken: false,
    containers: [{ name: 'main', image: 'registry.example/bench/app:1.0', ports: [{ containerPort: 8080 }] }],
  },
});
// Headless: the fixture's service CIDR (/24) has room for ~250 ClusterIPs.
const service = (i: number) => ({
  metadata: { name: `svc-${String(i).padStart(4, '0')}`, labels: { app: `app-${i % 20}` } },
  spec: {
    clusterIP: 'None',
    selector: { app: `app-${i % 20}` },
    ports: [{ name: 'http', port: 80, targetPort: 8080 }],
  },
});
const endpointSlice = (i: number, services: number) => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: {
    name: `svc-${String(i % services).padStart(4, '0')}-${String(i).padStart(5, '0')}`,
    labels: {
      'kubernetes.io/service-name': `svc-${String(i % services).padStart(4, '0')}`,
      'endpointslice.kubernetes.io/managed-by': 'bench.kcp',
    },
  },
  addressType: 'IPv4',
  ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  endpoints: Array.from({ length: 3 }, (_, k) => ({
    addresses: [`10.${(i >> 8) & 255}.${i & 255}.${k + 1}`],
    conditions: { ready: true, serving: true, terminating: false },
    nodeName: nlNode((i + k) % 20),
    zone: `zone-${k}`,
  })),
});

/**
 * Seeds namespace `ns`: nodes, pods bound to them, Services, EndpointSlices (409 accepted).
 * @throws Error naming the request on any other failed create.
 */
export async function seed(
  up: Upstream,
  ns: string,
  nodes: string[],
  podsPerNode: number,
  services: number,
  slices: number,
): Promise<void> {
  await create(up, '/api/v1/namespaces', { metadata: { name: ns } });
  // No controller-manager in the fixture: the pods' ServiceAccount is created here.
  await create(up, `/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'default' } });
  await parallel(nodes.length, 8, (i) => create(up, '/api/v1/nodes', { metadata: { name: nodes[i] } }));
  await parallel(nodes.length * podsPerNode, 32, (i) =>
    create(
      up,
      `/api/v1/namespaces/${ns}/pods`,
      pod(`pod-${String(i).padStart(5, '0')}`, nodes[i % nodes.length]!, i),
    ),
  );
  await parallel(services, 32, (i) => create(up, `/api/v1/namespaces/${ns}/services`, service(i)));
  await parallel(slices, 32, (i) =>
    create(up, `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, endpointSlice(i, services)),
  );
}

/** `agents` ServiceAccounts `agent-N` allowed to list/watch pods, services, endpointslices; their tokens. */
export async function agentTokens(up: Upstream, agents: number): Promise<string[]> {
  const role = 'bench-nl-agent';
  const r = await call(up, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    metadata: { name: role },
    rules: [
      { apiGroups: [''], resources: ['pods', 'services', 'nodes'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
    ],
  });
  if (r.status !== 201 && r.status !== 409) throw new Error(`clusterrole: ${r.status} ${r.text}`);
  const names = Array.from({ length: agents }, (_, i) => `agent-${i}`);
  for (const name of names)
    await create(up, `/api/v1/namespaces/${NS}/serviceaccounts`, { metadata: { name } });
  await create(up, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    metadata: { name: role },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: names.map((name) => ({ kind: 'ServiceAccount', name, namespace: NS })),
  });
  const tokens: string[] = [];
  for (const name of names) {
    const t = await call(up, 'POST', `/api/v1/namespaces/${NS}/serviceaccounts/${name}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 7200 },
    });
    if (t.status !== 201) throw new Error(`token ${name}: ${t.status} ${t.text}`);
    tokens.push((JSON.parse(t.text) as { status: { token: string } }).status.token);
  }
  return tokens;
}

/** The apiserver's metrics text. */
async function metricsText(up: Upstream): Promise<string> {
  const r = await call(up, 'GET', '/metrics');
  if (r.status !== 200) throw new Error(`apiserver /metrics: ${r.status}`);
  return r.text;
}

function sumMetric(text: string, metric: string, match: (line: string) => boolean): number {
  let total = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(`${metric}{`) && match(line)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  return total;
}

/** WATCHes in flight on the 3 resources; TokenReviews and SARs created so far. */
async function apiserverCounters(up: Upstream) {
  const t = await metricsText(up);
  return {
    watches: sumMetric(
      t,
      'apiserver_longrunning_requests',
      (l) => l.includes('verb="WATCH"') && RESOURCES.some((r) => l.includes(`resource="${r}"`)),
    ),
    tokenReviews: sumMetric(
      t,
      'apiserver_request_total',
      (l) => l.includes('resource="tokenreviews"') && l.includes('verb="POST"'),
    ),
    sars: sumMetric(
      t,
      'apiserver_request_total',
      (l) => l.includes('resource="subjectaccessreviews"') && l.includes('verb="POST"'),
    ),
  };
}

/** A running agent worker. */
export interface Agents {
  child: ChildProcess;
  ready: Promise<void>;
  stop(): Promise<AgentResult>;
}

/**
 * Starts bench/workers/agent-worker.ts with `spec`, pinned to `cpu`; `ready` rejects when it exits
 * first, `stop()` resolves with its result (SIGKILL after 10 s) or throws when it printed none.
 */
export function startAgents(spec: AgentSpec, cpu: string): Agents {
  const child = spawn(
    'taskset',
    ['-c', cpu, process.execPath, here('../workers/agent-worker.ts'), JSON.stringify(spec)],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-2000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready\n')) resolve();
    });
    child.once('exit', (c) => reject(new Error(`agent worker exited ${c} before ready: ${err}`)));
  });
  return {
    child,
    ready,
    async stop() {
      child.stdin!.end('stop\n');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
      const line = out.trim().split('\n').pop() ?? '';
      if (!line.startsWith('{')) throw new Error(`agent worker: no result: ${err}`);
      return JSON.parse(line) as AgentResult;
    },
  };
}

/** Writes so far in this process (every patch writes a new value). */
let ticks = 0;

/**
 * Patches pods round robin over the nodes, and a Service every 5th write, for `ms`; resolves
 * with the writes done. Throws on a failed write.
 */
export async function writeFor(up: Upstream, p: NodeLocalParams, ms: number): Promise<number> {
  const total = p.nodes * p.podsPerNode;
  const end = performance.now() + ms;
  let n = 0;
  const first = ticks;
  while (performance.now() < end) {
    const t = performance.now();
    const i = first + n;
    const podPath = `/api/v1/namespaces/${NS}/pods/pod-${String(i % total).padStart(5, '0')}`;
    const paths = [podPath];
    if (n % 5 === 0)
      paths.push(
        `/api/v1/namespaces/${NS}/services/svc-${String(Math.floor(i / 5) % p.services).padStart(4, '0')}`,
      );
    for (const path of paths) {
      // A value never written before: a patch that changes nothing makes no watch event.
      const patch = { metadata: { annotations: { 'bench.kcp/tick': String(++ticks) } } };
      const r = await call(up, 'PATCH', path, patch, 'application/merge-patch+json');
      if (r.status !== 200) throw new Error(`writer: PATCH ${path}: ${r.status} ${r.text.slice(0, 200)}`);
    }
    n++;
    const wait = 1000 / p.writesPerS - (performance.now() - t);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  return ticks - first;
}

/** The apiserver's CPU cores over `ms` with no clients but the rows' three /metrics scrapes. */
async function idleCores(f: Fixture, up: Upstream, ms: number): Promise<number> {
  const pid = f.pids().apiserver;
  const t0 = performance.now();
  const c0 = cpuSeconds(pid);
  await apiserverCounters(up);
  await new Promise((r) => setTimeout(r, ms / 2));
  await apiserverCounters(up);
  await new Promise((r) => setTimeout(r, ms / 2));
  await apiserverCounters(up);
  return round((cpuSeconds(pid) - c0) / ((performance.now() - t0) / 1000), 3);
}

/** Runs one row; throws on a failure (the caller records it). */
async function runRow(
  f: Fixture,
  up: Upstream,
  p: NodeLocalParams,
  mode: NodeLocalRow['mode'],
  tokens: string[],
  cpus: NodeLocalCpus,
  work: string,
  idleCores: number,
  log: (m: string) => void,
): Promise<NodeLocalRow> {
  const apiPort = Number(new URL(f.server).port);
  const relay = await startByteRelay('127.0.0.1', apiPort);
  const relayUrl = `https://127.0.0.1:${relay.port}`;
  const apiPid = f.pids().apiserver;
  const etcdPid = f.pids().etcd;
  const before = await apiserverCounters(up);
  const cpu0 = { api: cpuSeconds(apiPid), etcd: cpuSeconds(etcdPid) };
  const t0 = performance.now();
  const proxies: ProxyProcess[] = [];
  let pool: ProxyProcess | undefined;
  const agents: Agents[] = [];
  const tls = ['--tls-cert-file', f.proxyTls.certFile, '--tls-private-key-file', f.proxyTls.keyFile];
  const delegated = [...tls, '--client-ca-file', f.clientCaFile, '--delegated-auth'];
  try {
    const toApiserver = await writeKubeconfig(join(work, `relay-${relay.port}.kubeconfig`), {
      server: relayUrl,
      caFile: f.caFile,
      user: { token: f.tokens.admin },
    });
    let nodeUpstream = toApiserver;
    if (mode === 'node proxies + pool') {
      pool = await startProxy({
        kubeconfig: toApiserver,
        resources: ['pods', 'services', 'endpointslices.discovery.k8s.io'],
        cpu: cpus.other,
        extraArgs: delegated,
      });
      nodeUpstream = await writeKubeconfig(join(work, `pool-${relay.port}.kubeconfig`), {
        server: pool.url,
        caFile: f.caFile,
        user: { token: f.tokens.admin },
      });
    }
    const nodes = Array.from({ length: p.nodes }, (_, i) => nlNode(i));
    if (mode !== 'direct') {
      // One after the other: each start (type stripping, first sync) is staggered by the last's readiness.
      for (const node of nodes) {
        proxies.push(
          await startProxy({
            kubeconfig: nodeUpstream,
            resources: [
              `pods[fieldSelector=spec.nodeName=${node}]`,
              'services',
              'endpointslices.discovery.k8s.io',
            ],
            cpu: cpus.other,
            extraArgs: [...delegated, '--host-network'],
          }),
        );
      }
    }
    const tSync = performance.now();
    for (const [i, node] of nodes.entries()) {
      const paths = agentPaths(node);
      agents.push(
        startAgents(
          {
            base: mode === 'direct' ? relayUrl : proxies[i]!.url,
            agents: tokens.slice(0, p.agentsPerNode).map((token) => ({ token, paths })),
            staggerMs: p.staggerMs,
          },
          cpus.other,
        ),
      );
      await new Promise((r) => setTimeout(r, p.staggerMs));
    }
    await Promise.all(agents.map((a) => a.ready));
    const syncS = (performance.now() - tSync) / 1000;
    const syncBytes = relay.bytes().down;
    const tSteady = performance.now();
    log(`node-local ${mode}: ${agents.length} agent workers synced in ${round(syncS)} s`);
    const half = (p.steadyS * 1000) / 2;
    let writes = await writeFor(up, p, half);
    const mid = await apiserverCounters(up);
    writes += await writeFor(up, p, half);
    // Deliveries in flight.
    await new Promise((r) => setTimeout(r, 1000));
    const steadyBytes = relay.bytes().down - syncBytes;
    const steadyS = (performance.now() - tSteady) / 1000;
    const results = await Promise.all(agents.map((a) => a.stop()));
    agents.length = 0;
    const after = await apiserverCounters(up);
    const all = [...proxies, ...(pool ? [pool] : [])];
    const proxyCpuS = all.reduce((s, x) => s + cpuSeconds(x.pid), 0);
    const rss = proxies.map((x) => rssBytes(x.pid));
    const errors = results.flatMap((r) => r.errors);
    if (errors.length) log(`node-local ${mode}: agent errors: ${errors.slice(0, 3).join(' | ')}`);
    const byPath: Record<string, number> = {};
    for (const x of results)
      for (const [k, v] of Object.entries(x.eventsByPath)) {
        const key = k.startsWith('/api/v1/pods') ? 'pods' : k.split('/').pop()!;
        byPath[key] = (byPath[key] ?? 0) + v;
      }
    const row: NodeLocalRow = {
      mode,
      nodes: p.nodes,
      agents: p.nodes * p.agentsPerNode,
      agentWatches: results.reduce((s, r) => s + r.watches, 0),
      apiserverWatches: mid.watches - before.watches,
      upstreamConnections: relay.connections(),
      upstreamMiB: round(relay.bytes().down / MiB, 2),
      syncMiB: round(syncBytes / MiB, 2),
      steadyMiB: round(steadyBytes / MiB, 3),
      steadyS: round(steadyS, 1),
      apiserverCpuS: round(cpuSeconds(apiPid) - cpu0.api, 2),
      apiserverCpuAboveIdleS: round(
        cpuSeconds(apiPid) - cpu0.api - idleCores * ((performance.now() - t0) / 1000),
        2,
      ),
      etcdCpuS: round(cpuSeconds(etcdPid) - cpu0.etcd, 2),
      tokenReviews: after.tokenReviews - before.tokenReviews,
      subjectAccessReviews: after.sars - before.sars,
      proxyCpuS: round(proxyCpuS, 2),
      nodeProxyRssMiB: rss.length ? round(rss.reduce((s, x) => s + x, 0) / rss.length / MiB) : 0,
      poolRssMiB: pool ? round(rssBytes(pool.pid) / MiB) : 0,
      syncS: round(syncS, 1),
      wallS: round((performance.now() - t0) / 1000, 1),
      writes,
      events: results.reduce((s, r) => s + r.events, 0),
      eventsByResource: byPath,
      relists: results.reduce((s, r) => s + r.relists, 0),
      retries: results.reduce((s, r) => s + r.retries, 0),
      agentErrors: errors.length,
      ...(pool ? await poolCounters(pool) : { poolRequests: {}, poolRelists: {} }),
    };
    if (errors.length) throw new Error(`${errors.length} agent errors, first: ${errors[0]}`);
    return row;
  } finally {
    await Promise.all(agents.map((a) => a.stop().catch(() => undefined)));
    await Promise.all(proxies.map((x) => x.stop()));
    await pool?.stop();
    await relay.close();
  }
}

/** The pool's requests by `served_from/reason` and relists by reason (see {@link NodeLocalRow}). */
async function poolCounters(pool: ProxyProcess): Promise<Pick<NodeLocalRow, 'poolRequests' | 'poolRelists'>> {
  const res = await request(`${pool.opsUrl}/metrics`);
  return poolCountersOf(await res.body.text());
}

/**
 * {@link NodeLocalRow.poolRequests} and `poolRelists` from a proxy's `/metrics` text (Prometheus
 * 0.0.4; throws on a malformed exposition): request counts summed by `served_from/reason`, relists
 * (`kube_cache_proxy_reflector_relists_total`, `initial` included) by reason.
 */
export function poolCountersOf(text: string): Pick<NodeLocalRow, 'poolRequests' | 'poolRelists'> {
  const poolRequests: Record<string, number> = {};
  const poolRelists: Record<string, number> = {};
  for (const s of parsePrometheus(text)) {
    if (s.name === 'kube_cache_proxy_requests_total') {
      const key = `${s.labels.served_from}/${s.labels.reason ?? ''}`;
      poolRequests[key] = (poolRequests[key] ?? 0) + s.value;
    } else if (s.name === 'kube_cache_proxy_reflector_relists_total') {
      const key = s.labels.reason ?? '';
      poolRelists[key] = (poolRelists[key] ?? 0) + s.value;
    }
  }
  return { poolRequests, poolRelists };
}

/** The memory row (see the module docstring). */
async function memoryRow(
  f: Fixture,
  up: Upstream,
  p: NodeLocalParams,
  cpu: string,
): Promise<NodeLocalMemory> {
  const m = p.memory;
  await seed(up, MEM_NS, [MEM_NODE], m.pods, 0, 0);
  // The node's share: its pods, and the cluster's Services and EndpointSlices topped up to the
  // memory row's counts (the rows' own objects count).
  const count = async (path: string) =>
    ((JSON.parse((await call(up, 'GET', path)).text) as { items: unknown[] }).items ?? []).length;
  const haveSvc = await count('/api/v1/services');
  const haveEps = await count('/apis/discovery.k8s.io/v1/endpointslices');
  await parallel(Math.max(0, m.services - haveSvc), 32, (i) =>
    create(up, `/api/v1/namespaces/${MEM_NS}/services`, service(i)),
  );
  await parallel(Math.max(0, m.endpointSlices - haveEps), 32, (i) =>
    create(up, `/apis/discovery.k8s.io/v1/namespaces/${MEM_NS}/endpointslices`, endpointSlice(i, m.services)),
  );
  const objects = {
    pods: await count(`/api/v1/pods?fieldSelector=spec.nodeName%3D${MEM_NODE}`),
    services: await count('/api/v1/services'),
    endpointSlices: await count('/apis/discovery.k8s.io/v1/endpointslices'),
  };
  // The built CLI when the run built it (what the image runs: ~30 MiB less than type stripping).
  const cli = existsSync(DIST_CLI) ? { cli: DIST_CLI } : {};
  const measure = (resource: string) =>
    measureProxy({ kubeconfig: f.kubeconfigs.adminToken, resource, cpu, heapSnapshot: false, ...cli });
  const idle = await measure('limitranges');
  const share = await measure(
    `pods[fieldSelector=spec.nodeName=${MEM_NODE}],services,endpointslices.discovery.k8s.io`,
  );
  const r = (b: number) => round(b / MiB);
  return {
    objects,
    idleRssMiB: r(idle.at2s.rss),
    shareRssMiB: r(share.at2s.rss),
    addedMiB: r(share.at2s.rss - idle.at2s.rss),
    idleRssGcMiB: r(idle.afterGc.rss),
    shareRssGcMiB: r(share.afterGc.rss),
    addedGcMiB: r(share.afterGc.rss - idle.afterGc.rss),
    goalMiB: 24,
  };
}

/**
 * Runs the scenario on fixture `f` (seeds namespace `bench-nl` and the memory row's
 * `bench-nl-mem`); rows that fail are in `failures` (and logged), never thrown.
 */
export async function nodeLocalScenario(
  f: Fixture,
  up: Upstream,
  p: NodeLocalParams,
  cpus: NodeLocalCpus,
  log: (m: string) => void,
): Promise<NodeLocalResults> {
  const failures = new RowFailures(log);
  const out: NodeLocalResults = { params: p, idleApiserverCores: 0, rows: [], failures: failures.rows };
  const work = mkdtempSync(join(tmpdir(), 'kcp-bench-nl-'));
  try {
    const seeded = await failures.attempt('node-local', 'seed', async () => {
      const t = performance.now();
      const nodes = Array.from({ length: p.nodes }, (_, i) => nlNode(i));
      await seed(up, NS, nodes, p.podsPerNode, p.services, p.endpointSlices);
      log(`node-local: seeded in ${round((performance.now() - t) / 1000)} s`);
      return agentTokens(up, p.agentsPerNode);
    });
    if (seeded) {
      out.idleApiserverCores = await idleCores(f, up, p.steadyS * 1000);
      log(`node-local: idle apiserver ${out.idleApiserverCores} cores`);
      for (const mode of ['direct', 'node proxies', 'node proxies + pool'] as const) {
        const row = await failures.attempt(
          'node-local',
          mode,
          () => runRow(f, up, p, mode, seeded, cpus, work, out.idleApiserverCores, log),
          900_000,
        );
        if (row) {
          out.rows.push(row);
          log(`node-local ${mode}: ${JSON.stringify(row)}`);
        }
      }
    }
    const mem = await failures.attempt('node-local', 'memory (a node share)', () =>
      memoryRow(f, up, p, cpus.other),
    );
    if (mem) {
      out.memory = mem;
      log(`node-local memory: ${JSON.stringify(mem)}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const cpus = { apiserver: '0', other: '1' };
  const log = benchLog;
  pin(process.pid, cpus.other);
  const f = await startFixture({ verbose: false });
  for (const pid of [f.pids().apiserver, f.pids().etcd]) pin(pid, cpus.apiserver);
  const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
  let r: NodeLocalResults | undefined;
  const t0 = performance.now();
  try {
    r = await nodeLocalScenario(f, up, quick ? NODE_LOCAL_QUICK : NODE_LOCAL_FULL, cpus, log);
  } finally {
    await up.close().catch(() => {});
    await f.stop();
  }
  endScenario({
    name: 'node-local',
    quick,
    kubeApiserver: f.version,
    t0,
    results: r,
    render: renderNodeLocal,
    failed: 'failed rows',
    log,
  });
}

if (import.meta.main) await main();
