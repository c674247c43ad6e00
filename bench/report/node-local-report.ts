/**
 * Markdown for the node-local rows (bench/scenarios/node-local.ts): the measured rows, the extrapolation
 * to 5,000 nodes with its formula, the memory row and the failed rows. Used for the `node-local`
 * block of docs/benchmarks.md and inside the whole bench's report (bench/report/report.ts).
 */

import { fmt, table } from './markdown.ts';
import type { NodeLocalReport, NodeLocalResults, NodeLocalRow } from './results.ts';

/** Nodes of the extrapolation, and nodes per pool proxy. */
export const EXTRAPOLATE = { nodes: 5000, nodesPerPool: 100 } as const;

/**
 * How many upstream clients a row has per K nodes, as a function of the node count `n`: direct,
 * every agent (n·A); node proxies, one per node (n); with pools, one pool per
 * {@link EXTRAPOLATE.nodesPerPool} nodes (⌈n / nodesPerPool⌉; the bench's K nodes share one).
 */
function upstreamClients(row: NodeLocalRow, n: number, agentsPerNode: number, measured: boolean): number {
  if (row.mode === 'direct') return n * agentsPerNode;
  if (row.mode === 'node proxies') return n;
  return measured ? 1 : Math.ceil(n / EXTRAPOLATE.nodesPerPool);
}

/** The Markdown of `r` (see the module docstring). */
export function renderNodeLocal(r: NodeLocalReport | (NodeLocalResults & Partial<NodeLocalReport>)): string {
  const p = r.params;
  const out: string[] = [];
  if (r.date)
    out.push(
      `Run ${r.date.slice(0, 16).replace('T', ' ')} UTC (${r.mode} mode, ${fmt((r.totalS ?? 0) / 60)} min), kube-apiserver ${r.kubeApiserver} + etcd (fixture), 2 shared cores: kube-apiserver + etcd pinned to CPU 0, everything else (proxies, agents, writer, relay) to CPU 1.`,
      '',
    );
  out.push(
    `K = ${p.nodes} nodes × ${p.podsPerNode} pods (~2 KB) bound to each, ${p.services.toLocaleString('en-US')} Services, ${p.endpointSlices.toLocaleString('en-US')} EndpointSlices (3 endpoints); A = ${p.agentsPerNode} agents per node, each list-watching R = 3 resources (its node's pods, Services, EndpointSlices). Each row runs from the first process start to the end of a ${p.steadyS} s window with ${p.writesPerS} pod patches/s (and a Service patch per 5). Node proxies and the pool: TLS + \`--delegated-auth\`, started one after the other. Idle apiserver (seeded, no clients, the same /metrics scrapes): ${fmt(r.idleApiserverCores ?? 0, 3)} cores; "above idle" subtracts that rate × the row's duration.`,
    '',
  );
  if (r.rows.length)
    out.push(
      table(
        [
          'row',
          'agent watches',
          'apiserver watches',
          'upstream MiB: sync + steady',
          'apiserver CPU s (above idle)',
          'etcd CPU s',
          'TokenReviews',
          'SARs',
          'proxies CPU s',
          'node proxy RSS MiB',
          'agents synced in s',
          'agent retries',
          'events',
        ],
        r.rows.map((x) => [
          x.mode,
          x.agentWatches,
          x.apiserverWatches,
          x.syncMiB !== undefined ? `${fmt(x.syncMiB, 2)} + ${fmt(x.steadyMiB, 3)}` : fmt(x.upstreamMiB, 2),
          `${fmt(x.apiserverCpuS, 2)} (${fmt(x.apiserverCpuAboveIdleS ?? x.apiserverCpuS, 2)})`,
          fmt(x.etcdCpuS, 2),
          x.tokenReviews,
          x.subjectAccessReviews,
          fmt(x.proxyCpuS, 1),
          x.nodeProxyRssMiB ? fmt(x.nodeProxyRssMiB) : '–',
          fmt(x.syncS),
          x.retries ?? 0,
          x.events.toLocaleString('en-US'),
        ]),
      ),
      '',
    );
  for (const x of r.rows) {
    // Older results files have no pool counters.
    if (!x.poolRequests || Object.keys(x.poolRequests).length === 0) continue;
    const by = (o: Record<string, number>) =>
      Object.entries(o)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k || '–'} ${v.toLocaleString('en-US')}`)
        .join(', ');
    out.push(
      `The pool's requests in the \`${x.mode}\` row, by served_from/reason: ${by(x.poolRequests)}; its relists: ${by(x.poolRelists ?? {}) || 'none'}.`,
      '',
    );
  }
  const N = EXTRAPOLATE.nodes;
  const P = Math.ceil(N / EXTRAPOLATE.nodesPerPool);
  if (r.rows.length) {
    out.push(
      `**Extrapolation to N = ${N.toLocaleString('en-US')} nodes** (pools of ${EXTRAPOLATE.nodesPerPool} nodes: P = ${P}). Upstream clients c(n): direct n·A, node proxies n, with pools ⌈n / ${EXTRAPOLATE.nodesPerPool}⌉ (1 in the bench). Apiserver watches = c(N)·R. Sync bytes (every client's initial list), the steady-state byte rate (the window's writes fanned out to every watch) and apiserver CPU above idle are taken as linear in the upstream clients: X(N) = X(bench) / c(bench) × c(N) — each upstream client lists and watches the same objects, so its share is the same; this holds for the bench's object counts and write rate (a cluster-wide Service patch every 0.5 s), and grows with them (more Services or churn multiply every row alike). Except for the pool's pods: a pool caches every pod of the cluster (a field selector cannot name a set of nodes), so its pods grow with N (pods listed at sync: direct N·A·${p.podsPerNode}, node proxies N·${p.podsPerNode}, pools P·N·${p.podsPerNode}) and the pool row is a lower bound (≥).`,
      '',
      table(
        [
          'row',
          'c(N)',
          'apiserver watches',
          'pods listed at sync',
          'sync GiB',
          'steady MiB/s',
          'apiserver CPU s above idle',
          'vs direct',
        ],
        r.rows.map((x) => {
          const cb = upstreamClients(x, p.nodes, p.agentsPerNode, true);
          const cn = upstreamClients(x, N, p.agentsPerNode, false);
          const direct = r.rows.find((d) => d.mode === 'direct');
          const above = (y: NodeLocalRow) => Math.max(0, y.apiserverCpuAboveIdleS ?? y.apiserverCpuS);
          const cpu = (above(x) / cb) * cn;
          // A pool caches every pod of the cluster (no field selector names a set of nodes):
          // its pods grow with N, which the linear model does not see, hence "≥".
          const pool = x.mode === 'node proxies + pool';
          const ge = pool ? '≥ ' : '';
          const podsListed = cn * (pool ? N * p.podsPerNode : p.podsPerNode);
          const directCpu = direct ? (above(direct) / (p.nodes * p.agentsPerNode)) * N * p.agentsPerNode : 0;
          return [
            x.mode,
            `${x.mode === 'direct' ? `N·A = ${cn.toLocaleString('en-US')}` : x.mode === 'node proxies' ? `N = ${cn.toLocaleString('en-US')}` : `P = ${cn}`}`,
            (cn * 3).toLocaleString('en-US'),
            podsListed.toLocaleString('en-US'),
            ge + fmt((((x.syncMiB ?? x.upstreamMiB) / cb) * cn) / 1024, 2),
            x.steadyS ? ge + fmt((x.steadyMiB / x.steadyS / cb) * cn, 2) : '–',
            ge + fmt(cpu, 0),
            directCpu > 0 ? `${ge}${fmt((cpu / directCpu) * 100, 2)} % CPU` : '–',
          ];
        }),
      ),
      '',
    );
  }
  if (r.memory) {
    const m = r.memory;
    out.push(
      `**Memory of a node proxy holding a node's share** (${m.objects.pods} pods on its node, ${m.objects.services.toLocaleString('en-US')} Services, ${m.objects.endpointSlices.toLocaleString('en-US')} EndpointSlices; bench/support/memory.ts, src/cli.ts): idle RSS ${fmt(m.idleRssMiB)} MiB + **${fmt(m.addedMiB)} MiB** 2 s after ready (after a forced GC: ${fmt(m.idleRssGcMiB)} + ${fmt(m.addedGcMiB)} MiB); goal ≤ ${m.goalMiB} MiB: ${m.addedMiB <= m.goalMiB ? 'met' : 'not met'}.`,
      '',
    );
  }
  if (r.failures.length)
    out.push(
      '**Failed rows** (recorded, the run went on)',
      '',
      table(
        ['row', 'error'],
        r.failures.map((x) => [x.row, x.error.replaceAll('|', '\\|')]),
      ),
      '',
    );
  return out.join('\n').trim();
}
