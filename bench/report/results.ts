/**
 * The result types of the bench, in one module that imports nothing from the rest of bench/:
 * what the scenarios produce, what bench/run.ts and the stand-alone scenario runs write to
 * bench/results/*.json, and what the renderers in bench/report/ read. Scenarios and renderers
 * both import from here, never from each other (no import circles).
 */

type Num = number;

// ---- shared by every scenario

/** A row that produced no result: where it was, what went wrong, when (s since the run began). */
export interface FailedRow {
  scenario: string;
  row: string;
  error: string;
  atS: number;
}

// ---- memory rows (bench/support/memory.ts; bench/scenarios/cold.ts)

/** Bytes by class, largest first; `totalBytes` is the sum of every node's self size. */
export interface HeapClasses {
  totalBytes: number;
  classes: Array<{ name: string; count: number; bytes: number }>;
}

/** One memory row. */
export interface MemoryRow {
  what: string;
  resource: string;
  objects: number;
  readyMs: number;
  peakRssMiB: number;
  /** 2 s after ready. */
  rssMiB: number;
  heapUsedMiB: number;
  /** After a forced GC. */
  rssGcMiB: number;
  heapUsedGcMiB: number;
  arrayBuffersGcMiB: number;
  jsonPerObjectBytes: number;
  /** (RSS 2 s − empty-cache RSS 2 s) / objects. */
  rssPerObjectBytes: number;
  rssPerJsonByte: number;
  /** The same from the after-GC figures. */
  rssPerJsonByteGc: number;
  /** (heapUsed + arrayBuffers after GC − the empty cache's) per JSON byte: what the cache holds live. */
  livePerJsonByte: number;
  heap?: HeapClasses;
}

// ---- pass-through rows (bench/scenarios/passthrough.ts)

/** The summary of one (op, target) over all its repetitions. Latencies ms. */
export interface PassthroughRow {
  op: string;
  target: string;
  connections: number;
  reps: number;
  /** Median over the repetitions. */
  rps: number;
  rpsMin: number;
  rpsMax: number;
  p50Ms: number;
  p99Ms: number;
  /** Median / min / max of (this target's req/s ÷ DIRECT's req/s in the same repetition). */
  ratio: number;
  ratioMin: number;
  ratioMax: number;
  /** Median of (this target's p99 − DIRECT's p99 in the same repetition), ms. */
  p99DeltaMs: number;
  non2xx: number;
}

// ---- node-local rows (bench/scenarios/node-local.ts)

/** Sizes of a run. */
export interface NodeLocalParams {
  nodes: number;
  podsPerNode: number;
  agentsPerNode: number;
  services: number;
  endpointSlices: number;
  /** Steady window after every agent synced, s. */
  steadyS: number;
  /** Pod patches per second during the window (one Service patch per 5). */
  writesPerS: number;
  /** Delay between two agents' starts, ms. */
  staggerMs: number;
  /** The memory row's node share. */
  memory: { pods: number; services: number; endpointSlices: number };
}

/** One row: one way the agents reach the API. */
export interface NodeLocalRow {
  mode: 'direct' | 'node proxies' | 'node proxies + pool';
  nodes: number;
  agents: number;
  /** Watches the agents hold (K × agents × 3 in every row). */
  agentWatches: number;
  /** WATCH requests in flight at the apiserver mid-window (minus before the row). */
  apiserverWatches: number;
  /** Connections the relay accepted (the upstream clients' TCP connections). */
  upstreamConnections: number;
  /** Bytes apiserver → its clients over the row, MiB (relay). */
  upstreamMiB: number;
  /** The same until every agent synced (proxies' and agents' initial lists), and in the steady window. */
  syncMiB: number;
  steadyMiB: number;
  /** The steady window, s (writes, then 1 s for deliveries). */
  steadyS: number;
  /** kube-apiserver CPU seconds over the row; etcd's separately. */
  apiserverCpuS: number;
  /** The same minus the idle apiserver's rate ({@link NodeLocalResults.idleApiserverCores}) × the row's duration. */
  apiserverCpuAboveIdleS: number;
  etcdCpuS: number;
  tokenReviews: number;
  subjectAccessReviews: number;
  /** CPU seconds of all node proxies (and the pool) over the row; mean node-proxy RSS at the end. */
  proxyCpuS: number;
  nodeProxyRssMiB: number;
  poolRssMiB: number;
  /** First agent started → every agent's watches open, s. */
  syncS: number;
  /** Row duration, s. */
  wallS: number;
  /** Writes (pod and Service patches) in the window. */
  writes: number;
  /** Watch events the agents received in the window (by resource); re-lists; agent errors. */
  events: number;
  eventsByResource: Record<string, number>;
  /** Agents' failed LIST/WATCH attempts that they retried. */
  retries: number;
  relists: number;
  agentErrors: number;
  /**
   * The pool's `kube_cache_proxy_requests_total` over the row, by `served_from/reason`
   * (`cache/`, `upstream/not-live`, …), and its reflectors' relists by reason: which of them
   * moved the pool row's sync bytes (they varied 7× between two runs). Empty without a pool.
   */
  poolRequests: Record<string, number>;
  poolRelists: Record<string, number>;
}

/** The memory row. */
export interface NodeLocalMemory {
  objects: { pods: number; services: number; endpointSlices: number };
  idleRssMiB: number;
  shareRssMiB: number;
  addedMiB: number;
  idleRssGcMiB: number;
  shareRssGcMiB: number;
  addedGcMiB: number;
  goalMiB: number;
}

/** What a run produces. */
export interface NodeLocalResults {
  params: NodeLocalParams;
  /** CPU cores the apiserver used idle (seeded, no clients), measured with the rows' own /metrics scrapes. */
  idleApiserverCores: number;
  rows: NodeLocalRow[];
  memory?: NodeLocalMemory;
  failures: FailedRow[];
}

/** A standalone run's file: the scenario's results plus when and on what it ran. */
export interface NodeLocalReport extends NodeLocalResults {
  date: string;
  mode: string;
  kubeApiserver: string;
  totalS: number;
}

// ---- on-demand caches (bench/scenarios/on-demand.ts)

/** The dataset and the timings of the scenario (seconds unless named otherwise). */
export interface OnDemandParams {
  pods: number;
  namespaces: number;
  nodes: number;
  /** JSON bytes per pod (bench/support/seed.ts). */
  podBytes: number;
  /** ConfigMaps of ~1 KiB, all in one namespace. */
  configMaps: number;
  /** `--auto-idle-timeout`, s. */
  idleTimeoutS: number;
  /** Pause between two polls of the proxy while its cache syncs, ms. */
  pollMs: number;
  /** Wait before each RSS sample of the empty and the held caches, s. */
  settleS: number;
  /** Wait after the eviction before the last RSS sample, s. */
  secondWaitS: number;
  /** How long the informer runs after its sync, ms. */
  probeMs: number;
}

/** One resource's first LIST, direct and through the auto proxy (ms unless named otherwise). */
export interface FirstListRow {
  resource: string;
  objects: number;
  /** Bytes of the gzip answer direct. */
  responseBytes: number;
  directMs: number;
  /** The proxy's first LIST (passed upstream; it starts the cache). */
  proxyFirstMs: number;
  /** proxyFirstMs / directMs. */
  firstRatio: number;
  /** First LIST sent → first LIST answered from the cache received, s. */
  startS: number;
  /** Time between the last upstream-answered poll and the first cache-answered one: the resolution of startS, ms. */
  resolutionMs: number;
  /** Polls until the cache answered. */
  polls: number;
  /** The full LIST again, from the cache. */
  cacheMs: number;
  /** cacheMs / directMs. */
  cacheRatio: number;
}

/** VmRSS of the proxy at one point of the run, MiB. */
export interface RssPoint {
  stage: 'empty' | 'held' | 'evicted' | 'evicted, later';
  rssMiB: number;
  /** Seconds since the proxy was ready. */
  atS: number;
}

/** One run of the scenario. */
export interface OnDemandRun {
  firstList: FirstListRow[];
  rss: RssPoint[];
  /** Peak RSS (VmHWM) of the proxy over the run, MiB. */
  peakRssMiB: number;
  /** Watches closed → both caches stopped as idle, s. */
  evictedAfterS: number;
  /** held − evicted-later RSS, MiB, and that as a fraction of held − empty. */
  returnedMiB: number;
  returnedFraction: number;
  /** Informer sync time (client-go, watch-list), direct and through a fresh auto proxy, ms. */
  informer: { directMs: number; proxyMs: number; ratio: number };
  loadavg: number[];
}

/** The scenario's results. */
export interface OnDemandResults {
  params: OnDemandParams;
  runs: OnDemandRun[];
  failures: FailedRow[];
}

// ---- the whole bench (bench/run.ts → bench/results/latest.json, quick.json)

/** The subset of the results the report reads (see bench/run.ts for the producer). */
export interface BenchResults {
  meta: {
    date: string;
    mode: string;
    kubeApiserver: string;
    kubeCacheProxy: string;
    node: string;
    autocannon: string;
    machine: { cpus: Num; cpuModel: string; memGiB: Num; loadavgAtStart: Num[] };
    pinning: Record<string, string>;
    dataset: { pods: Num; namespaces: Num; nodes: Num; podBytes: Num; configMaps: Num };
    durations: Record<string, Num>;
    totalS: Num;
    loadavgAtEnd: Num[];
    proxyPeakRssMiB: Num;
    /** The CLI file the memory rows ran (relative to the repository); absent before 2026-12-04. */
    memoryCli?: string;
  };
  list: Array<{
    query: string;
    target: string;
    encoding: string;
    responseBytes: Num;
    rps: Num;
    p50Ms: Num;
    p99Ms: Num;
    bytesPerSec: Num;
    non2xx: Num;
    errors: Num;
    serverCores: Num;
    apiserverCores: Num;
    serverRssMiB: Num;
  }>;
  watch: Array<WatchRowView>;
  slowConsumer: Array<WatchRowView>;
  upstream: Array<{
    probes: Num;
    target: string;
    lists: Num;
    watches: Num;
    upstreamMiB: Num;
    apiserverCpuS: Num;
    wallS: Num;
    syncP50Ms: Num;
    syncMaxMs: Num;
  }>;
  cold: {
    /** Runs before issue 12 have only the fields of the first group (RSS 2 s after ready). */
    proxy: Array<
      Pick<
        MemoryRow,
        | 'what'
        | 'objects'
        | 'readyMs'
        | 'peakRssMiB'
        | 'rssMiB'
        | 'rssPerObjectBytes'
        | 'jsonPerObjectBytes'
        | 'rssPerJsonByte'
      > &
        Partial<MemoryRow>
    >;
    reflector: Array<{
      resource: string;
      mode: string;
      objects: Num;
      ms: Num;
      listRequests: Num;
      peakRssMiB: Num;
    }>;
  };
  /** Runs before issue 12 have one run per row and only the first group of fields. */
  passthrough: Array<
    Pick<PassthroughRow, 'op' | 'target' | 'rps' | 'p50Ms' | 'p99Ms' | 'non2xx'> & Partial<PassthroughRow>
  >;
  /** Rows that failed or timed out (absent in runs before issue 12). */
  failures?: FailedRow[];
  /** Issue 10 (bench/scenarios/identity.ts); absent in results of older runs. */
  identity?: Array<{
    query: string;
    target: string;
    identities: Num;
    rps: Num;
    p50Ms: Num;
    p99Ms: Num;
    requests: Num;
    non2xx: Num;
    errors: Num;
    tokenReviews: Num;
    subjectAccessReviews: Num;
    tokenReviewsPer1000: Num;
    subjectAccessReviewsPer1000: Num;
    ttlS: Num;
    durationS: Num;
  }>;
  /** Issue 13's node-local rows (bench/scenarios/node-local.ts); absent in older results. */
  nodeLocal?: NodeLocalResults;
  /** exec round trip and port-forward throughput (bench/scenarios/streams.ts); absent in older results. */
  streams?: Array<{
    scenario: string;
    target: string;
    unit: string;
    reps: Num[];
    median: Num;
    min: Num;
    max: Num;
  }>;
}

export interface WatchRowView {
  target: string;
  watchers: Num;
  events: Num;
  eventsPerSec: Num;
  bytesPerSec: Num;
  p50Ms: Num;
  p99Ms: Num;
  maxMs: Num;
  healthyClosed: Num;
  stalledClosed: Num;
  stalledBytes: Num;
  serverCores: Num;
  writer: { target: Num | 'max'; achievedRate: Num; failed: Num };
}
