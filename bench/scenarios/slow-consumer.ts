/**
 * The slow-consumer rows of bench/run.ts: DIRECT and through the PROXY, 99 watches of all pods
 * that read everything plus 1 stalled watch that never reads, while the writer patches 100 pods/s
 * for long enough (25 s; quick 5 s) that the stalled watch overflows the proxy's 1,000-event
 * buffer and the socket buffers: the healthy watches' p99 delivery latency, whether the stalled
 * one was closed, and how many bytes it got.
 */
import type { Upstream } from '../../src/upstream/connection.ts';
import type { Fixture } from '../../test/fixture/index.ts';
import { type BenchContext, loadCpu } from '../support/context.ts';
import { clientHeaders } from '../support/load.ts';
import type { ProxyProcess } from '../support/proxy-process.ts';
import { currentRv, type WatchRow, watchRun } from '../support/watch-run.ts';

export async function slowConsumerScenario(
  { quick, failures, log }: BenchContext,
  f: Fixture,
  up: Upstream,
  proxy: ProxyProcess,
  apiPids: number[],
  pods: string[],
) {
  const rows: WatchRow[] = [];
  for (const target of ['direct', 'proxy']) {
    const base = target === 'direct' ? f.server : proxy.url;
    const rv = await currentRv(up);
    const url = `${base}/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`;
    const pids = target === 'direct' ? apiPids : [proxy.pid];
    const r = await failures.attempt(
      'slow consumer',
      target,
      () =>
        watchRun(
          up,
          pods,
          { url, headers: clientHeaders(f.tokens.admin, true), watchers: 99, stalled: 1 },
          100,
          // Long enough for the stalled watch to overflow the proxy's 1,000-event buffer plus socket buffers.
          (quick ? 5 : 25) * 1000,
          loadCpu(target),
          pids,
        ),
      300_000,
    );
    if (!r) continue;
    rows.push({ target, ...r.result, writer: r.writer, serverCores: r.serverCores });
    log(
      `slow consumer ${target}: p99 ${r.result.p99Ms} ms, stalled closed ${r.result.stalledClosed}, got ${r.result.stalledBytes} B`,
    );
  }
  return rows;
}
