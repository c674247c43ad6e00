/**
 * The rollout rows (bench/tools/rollout.ts): what one rollout of K node proxies cost the
 * apiserver, cold vs warm, as Markdown — every rollout, the medians with their min–max per mode,
 * and the extrapolation to {@link ROLLOUT_NODES} nodes (per-node terms measured, times N).
 */
import { fmt, table } from './markdown.ts';

/** Nodes of the extrapolation. */
export const ROLLOUT_NODES = 5000;

/** One rollout (see bench/tools/rollout.ts for how each figure is taken). */
export interface RolloutRow {
  run: number;
  mode: 'cold' | 'warm';
  /** First SIGTERM → `settleS` after the last new proxy was ready, s. */
  rolloutS: number;
  /** Per node, in rollout order: SIGTERM → the new proxy's /readyz 200, ms. */
  restartMs: number[];
  /** Per node: SIGTERM → the old process exited, ms. */
  shutdownMs: number[];
  /** apiserver → proxies over the rollout (relay, wire bytes). */
  upstreamBytes: number;
  /** The same less the steady rate (the mean of the windows before and after) × the rollout's duration. */
  upstreamBytesAboveSteady: number;
  /** The relay's bytes/s in the steady windows before and after the rollout. */
  steadyBytesPerS: [number, number];
  /** `apiserver_request_total{verb="LIST"}` by resource over the rollout. */
  apiserverLists: Record<string, number>;
  /** `apiserver_response_sizes_sum{verb="LIST"}` by resource, bytes. */
  apiserverListBytes: Record<string, number>;
  /**
   * `apiserver_watch_events_sizes_sum` by resource, bytes: events as the apiserver sent them,
   * a watch-list's initial events (how a proxy syncs cold) included.
   */
  apiserverWatchEventBytes: Record<string, number>;
  /** Their sum less the steady rate × the rollout's duration. */
  apiserverWatchEventBytesAboveSteady: number;
  /** Watch event bytes/s in the steady windows before and after. */
  steadyWatchEventBytesPerS: [number, number];
  tokenReviews: number;
  subjectAccessReviews: number;
  /** kube-apiserver utime+stime over the rollout, s. */
  apiserverCpuS: number;
  /** The same less its steady cores × the rollout's duration. */
  apiserverCpuAboveSteadyS: number;
  /** Its cores in the steady windows before and after. */
  steadyApiserverCores: [number, number];
  writesDuring: number;
  /** Agent watches in all (K × agents × 3). */
  agentWatches: number;
  /** Agent watches answered 410 and re-listed. */
  agentRelists: number;
  /** Agent watches re-opened from their last resourceVersion. */
  agentRewatches: number;
  agentRetries: number;
  agentErrors: number;
  /** The new proxies' counters, summed (keys `resource reason`, `verb resource code` …). */
  proxies: {
    relists: Record<string, number>;
    upstreamRequests: Record<string, number>;
    passedUpstream: Record<string, number>;
    snapshotLoads: Record<string, number>;
  };
  /** Load average (1 min) when the rollout started and ended. */
  load1: [number, number];
}

/** The results file of bench/tools/rollout.ts. */
export interface RolloutDoc {
  date: string;
  kubeApiserver: string;
  params: {
    nodes: number;
    podsPerNode: number;
    agentsPerNode: number;
    services: number;
    endpointSlices: number;
    writesPerS: number;
    runs: number;
    steadyS: number;
    settleS: number;
    graceS: number;
  };
  /** The proxy CLI the rollouts ran. */
  cli: string;
  rows: RolloutRow[];
}

/** Median, min and max of `xs` (NaN each when empty); the median of an even count is the mean of the middle two. */
export function spread(xs: number[]): { median: number; min: number; max: number } {
  if (!xs.length) return { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return { median: s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2, min: s[0]!, max: s[s.length - 1]! };
}

const total = (r: Record<string, number>) => Object.values(r).reduce((s, v) => s + v, 0);
const keyed = (r: Record<string, number>) =>
  Object.keys(r).length
    ? Object.entries(r)
        .map(([k, v]) => `${k}: ${fmt(v, 0)}`)
        .join(', ')
    : '–';

/** The per-mode figures the summary and the extrapolation use, each over the mode's rollouts. */
export const ROLLOUT_FIGURES = {
  'upstream bytes': (r: RolloutRow) => r.upstreamBytes,
  'upstream bytes above steady': (r: RolloutRow) => r.upstreamBytesAboveSteady,
  'apiserver LISTs': (r: RolloutRow) => total(r.apiserverLists),
  'LISTs sent by the new proxies': (r: RolloutRow) =>
    total(
      Object.fromEntries(Object.entries(r.proxies.upstreamRequests).filter(([k]) => k.startsWith('LIST '))),
    ),
  'apiserver LIST bytes': (r: RolloutRow) => total(r.apiserverListBytes),
  'apiserver watch event bytes': (r: RolloutRow) => total(r.apiserverWatchEventBytes),
  'apiserver watch event bytes above steady': (r: RolloutRow) => r.apiserverWatchEventBytesAboveSteady,
  'endpointslices watch event bytes (not written: sync only)': (r: RolloutRow) =>
    r.apiserverWatchEventBytes.endpointslices ?? 0,
  'apiserver CPU s': (r: RolloutRow) => r.apiserverCpuS,
  'apiserver CPU s above steady': (r: RolloutRow) => r.apiserverCpuAboveSteadyS,
  'TokenReviews + SARs': (r: RolloutRow) => r.tokenReviews + r.subjectAccessReviews,
  'agent relists': (r: RolloutRow) => r.agentRelists,
  'node restart → ready s': (r: RolloutRow) => spread(r.restartMs).median / 1000,
} as const;
type Figure = keyof typeof ROLLOUT_FIGURES;

const cell = (s: { median: number; min: number; max: number }, d: number) =>
  s.min === s.max ? fmt(s.median, d) : `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`;

/** The Markdown of `doc` (see the module docstring). */
export function renderRollout(doc: RolloutDoc): string {
  const p = doc.params;
  const k = p.nodes;
  const out: string[] = [];
  out.push(
    `Run ${doc.date.slice(0, 16).replace('T', ' ')} UTC, kube-apiserver ${doc.kubeApiserver}, proxies \`${doc.cli}\`: K = ${k} nodes × ${p.podsPerNode} pods, ${fmt(p.services, 0)} Services, ${fmt(p.endpointSlices, 0)} EndpointSlices, ${p.agentsPerNode} agents per node on 3 resources, ${p.writesPerS} writes/s; steady windows of ${p.steadyS} s before and after each rollout, settle ${p.settleS} s, SIGTERM grace ${p.graceS} s.`,
    '',
    table(
      [
        'run',
        'rollout',
        'duration s',
        'node restart → ready s (median, max)',
        'upstream bytes (above steady)',
        'apiserver LISTs pods / services / endpointslices',
        'apiserver LIST bytes',
        'apiserver watch event bytes pods / services / endpointslices (above steady)',
        'apiserver CPU s (above steady)',
        'steady apiserver cores before / after',
        'TokenReviews / SARs',
        'writes meanwhile',
        'agent relists / watches',
        'agent re-watches',
        "new proxies' relists",
        'client requests passed upstream',
        'load',
      ],
      doc.rows.map((r) => {
        const ms = spread(r.restartMs);
        return [
          r.run,
          r.mode,
          fmt(r.rolloutS),
          `${fmt(ms.median / 1000)}, ${fmt(ms.max / 1000)}`,
          `${fmt(r.upstreamBytes, 0)} (${fmt(r.upstreamBytesAboveSteady, 0)})`,
          ['pods', 'services', 'endpointslices'].map((x) => r.apiserverLists[x] ?? 0).join(' / '),
          fmt(total(r.apiserverListBytes), 0),
          `${['pods', 'services', 'endpointslices'].map((x) => fmt(r.apiserverWatchEventBytes[x] ?? 0, 0)).join(' / ')} (${fmt(r.apiserverWatchEventBytesAboveSteady, 0)})`,
          `${fmt(r.apiserverCpuS, 2)} (${fmt(r.apiserverCpuAboveSteadyS, 2)})`,
          r.steadyApiserverCores.map((x) => fmt(x, 3)).join(' / '),
          `${r.tokenReviews} / ${r.subjectAccessReviews}`,
          r.writesDuring,
          `${r.agentRelists} / ${r.agentWatches}`,
          r.agentRewatches,
          keyed(r.proxies.relists),
          keyed(r.proxies.passedUpstream),
          `${r.load1[0]}–${r.load1[1]}`,
        ];
      }),
    ),
  );
  const modes = (['cold', 'warm'] as const).filter((m) => doc.rows.some((r) => r.mode === m));
  const stat = (m: string, f: Figure) => spread(doc.rows.filter((r) => r.mode === m).map(ROLLOUT_FIGURES[f]));
  const digits = (f: Figure) => (f.includes('CPU') || f.includes('→') ? 2 : 0);
  const figures = Object.keys(ROLLOUT_FIGURES) as Figure[];
  out.push(
    '',
    `Median (min–max) over ${p.runs} runs per mode${modes.length === 2 ? '; warm ÷ cold of the medians' : ''}:`,
    '',
    table(
      ['per rollout of K nodes', ...modes, ...(modes.length === 2 ? ['warm ÷ cold'] : [])],
      figures.map((f) => {
        const s = modes.map((m) => stat(m, f));
        const ratio = s.length === 2 && s[0]!.median ? fmt(s[1]!.median / s[0]!.median, 3) : '–';
        return [f, ...s.map((x) => cell(x, digits(f))), ...(modes.length === 2 ? [ratio] : [])];
      }),
    ),
  );
  const terms: Figure[] = [
    'LISTs sent by the new proxies',
    'apiserver watch event bytes',
    'upstream bytes',
    'apiserver CPU s',
    'TokenReviews + SARs',
    'agent relists',
  ];
  out.push(
    '',
    `Extrapolated to N = ${fmt(ROLLOUT_NODES, 0)} nodes: X(N) = N × x, x = the median per rollout ÷ K (measured; whole-rollout figures, the steady load during each node's restart included):`,
    '',
    table(
      ['term', ...modes.flatMap((m) => [`${m}: x per node`, `${m}: X(${fmt(ROLLOUT_NODES, 0)})`])],
      [
        ...terms.map((f) => [
          f,
          ...modes.flatMap((m) => {
            const x = stat(m, f).median / k;
            const d = digits(f) || (f === 'apiserver LIST bytes' || f.includes('bytes') ? 0 : 1);
            return [fmt(x, d), fmt(x * ROLLOUT_NODES, digits(f))];
          }),
        ]),
        [
          'rollout hours at maxUnavailable 1 (node restart → ready × N)',
          ...modes.flatMap((m) => {
            const t = stat(m, 'node restart → ready s').median;
            return [`${fmt(t, 2)} s`, fmt((t * ROLLOUT_NODES) / 3600, 1)];
          }),
        ],
      ],
    ),
  );
  return out.join('\n');
}
