/**
 * What bench/run.ts shares with the scenarios it runs on its one fixture (bench/scenarios/list.ts,
 * watch.ts, slow-consumer.ts, passthrough.ts, upstream.ts, cold.ts): the sizes and durations of a
 * full run and of `--quick` ({@link BENCH_FULL}, {@link BENCH_QUICK}), the CPU layout, and a
 * {@link BenchContext} (the chosen sizes, the failure book, the log).
 *
 * CPU layout on the 2-core machine (taskset): apiserver + etcd + the orchestrator (seeding, the
 * watch writer) on {@link APISERVER_CPU}; the proxy (and the ceiling server) on
 * {@link PROXY_CPU}; the load generator on the core the server under test is NOT on
 * ({@link loadCpu}). The pass-through rows differ (bench/scenarios/passthrough.ts).
 */
import { WIDGETS } from './memory.ts';
import type { RowFailures } from './rows.ts';
import type { PodDataset } from './seed.ts';

export const APISERVER_CPU = '0';
export const PROXY_CPU = '1';
/** The load generator's core for `target`: CPU 1 for DIRECT, CPU 0 for PROXY and CEILING. */
export const loadCpu = (target: string) => (target.startsWith('direct') ? PROXY_CPU : APISERVER_CPU);
export const MiB = 2 ** 20;

/** `--quick`: the smoke run (test/e2e/bench-quick.test.ts). */
export const BENCH_QUICK = {
  data: { pods: 1000, namespaces: 10, nodes: 10, podBytes: 5000 } satisfies PodDataset,
  configMaps: 1000,
  widgets: 500,
  heapSnapshots: ['pods', 'configmaps', WIDGETS.resource],
  listS: 2,
  connections: 4,
  listQueries: ['all-rv0', 'get'],
  watchers: [1, 10, 100],
  watchRates: [100] as Array<number | 'max'>,
  watchS: 2,
  probes: [1, 5],
  probeMs: 1000,
  passS: 1,
  passReps: 3,
  passConnections: 1,
  // Issue 10: 100 identities; each row at least twice the decision-cache TTLs.
  identity: { identities: 100, durationS: 2, ttlS: 1 },
};

/** The full run (the figures of docs/benchmarks.md). */
export const BENCH_FULL: BenchParams = {
  data: { pods: 10_000, namespaces: 100, nodes: 50, podBytes: 5000 } satisfies PodDataset,
  configMaps: 100_000,
  widgets: 10_000,
  heapSnapshots: ['pods', WIDGETS.resource],
  listS: 8,
  connections: 4,
  listQueries: ['all-rv0', 'all-rv', 'namespace', 'node', 'get'],
  watchers: [1, 10, 100, 1000],
  watchRates: [100, 'max'] as Array<number | 'max'>,
  watchS: 6,
  probes: [1, 10, 50],
  probeMs: 2000,
  passS: 4,
  passReps: 5,
  passConnections: 1,
  identity: { identities: 100, durationS: 20, ttlS: 10 },
};

/** Sizes and durations of one run of bench/run.ts. */
export type BenchParams = typeof BENCH_QUICK;

/** Passed to every scenario bench/run.ts runs on its fixture. */
export interface BenchContext {
  /** The run's sizes and durations. */
  P: BenchParams;
  quick: boolean;
  /** Rows that fail or time out are recorded here (bench/support/rows.ts) and the run goes on. */
  failures: RowFailures;
  log: (msg: string) => void;
}
