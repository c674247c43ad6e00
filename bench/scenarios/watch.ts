/**
 * The watch fan-out rows of bench/run.ts: for each write rate of `P.watchRates` and each watcher
 * count of `P.watchers`, DIRECT and through the PROXY, `n` watches of all pods
 * (bench/workers/watch-worker.ts) while the writer patches pods (bench/support/watch-run.ts):
 * events delivered per second, delivery latency p50/p99/max (send stamp → receipt), bytes/s and
 * the server's cores.
 */
import type { Upstream } from '../../src/upstream/connection.ts';
import type { Fixture } from '../../test/fixture/index.ts';
import { type BenchContext, loadCpu } from '../support/context.ts';
import { clientHeaders } from '../support/load.ts';
import type { ProxyProcess } from '../support/proxy-process.ts';
import { currentRv, type WatchRow, watchRun } from '../support/watch-run.ts';

export async function watchScenario(
  { P, failures, log }: BenchContext,
  f: Fixture,
  up: Upstream,
  proxy: ProxyProcess,
  apiPids: number[],
  pods: string[],
) {
  const rows: WatchRow[] = [];
  for (const rate of P.watchRates) {
    for (const n of P.watchers) {
      for (const target of ['direct', 'proxy']) {
        const base = target === 'direct' ? f.server : proxy.url;
        const rv = await currentRv(up);
        const url = `${base}/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`;
        const headers = clientHeaders(f.tokens.admin, true);
        const pids = target === 'direct' ? apiPids : [proxy.pid];
        const r = await failures.attempt(
          'watch fan-out',
          `${n} watchers ${target} @${rate}`,
          () =>
            watchRun(
              up,
              pods,
              { url, headers, watchers: n, stalled: 0 },
              rate,
              P.watchS * 1000,
              loadCpu(target),
              pids,
            ),
          (P.watchS + 240) * 1000,
        );
        if (!r) continue;
        rows.push({ target, ...r.result, writer: r.writer, serverCores: r.serverCores });
        log(
          `watch ${n} ${target} @${rate}: ${r.writer.achievedRate} w/s, ${r.result.eventsPerSec} ev/s p50 ${r.result.p50Ms} p99 ${r.result.p99Ms} ms`,
        );
      }
    }
  }
  return rows;
}
