/**
 * Markdown for the on-demand rows (bench/scenarios/on-demand.ts): per run, the first LIST of each resource
 * direct and through the auto proxy, the start time until the cache answers, the informer's sync
 * time and the proxy's RSS before, during and after the idle eviction; with two or more runs, the
 * spread (max − min) of each figure. Used for the `on-demand` block of docs/benchmarks.md.
 */

import { fmt, table } from './markdown.ts';
import type { OnDemandResults, OnDemandRun } from './results.ts';

/** "a / b (spread s)" of one figure over the runs. */
function over(runs: OnDemandRun[], get: (r: OnDemandRun) => number | undefined, d = 1): string {
  const xs = runs.map(get).filter((x): x is number => x !== undefined);
  if (xs.length === 0) return '–';
  const s = xs.map((x) => fmt(x, d)).join(' / ');
  return xs.length > 1 ? `${s} (spread ${fmt(Math.max(...xs) - Math.min(...xs), d)})` : s;
}

/** The Markdown of `r` (see the module docstring). */
export function renderOnDemand(
  r: OnDemandResults & { date?: string; mode?: string; kubeApiserver?: string; loadavgAtStart?: number[] },
): string {
  const p = r.params;
  const runs = r.runs;
  const out: string[] = [];
  if (r.date)
    out.push(
      `Run ${r.date.slice(0, 16).replace('T', ' ')} UTC (${r.mode} mode, ${runs.length} runs, figures per run as "run 1 / run 2 (spread)"), kube-apiserver ${r.kubeApiserver}; load average at start ${r.loadavgAtStart?.join(', ')}, at the end of each run ${runs.map((x) => x.loadavg[0]).join(', ')} (1 min).`,
      '',
    );
  out.push(
    `${p.pods.toLocaleString('en-US')} pods (~${p.podBytes} B JSON) and ${p.configMaps.toLocaleString('en-US')} ConfigMaps (~1 KiB); proxy \`--resources=auto --auto-idle-timeout=${p.idleTimeoutS}s\` (built CLI), polled every ${p.pollMs} ms until a LIST is answered from the cache.`,
    '',
  );
  const resources = [...new Set(runs.flatMap((x) => x.firstList.map((y) => y.resource)))];
  const fl = (res: string, k: keyof OnDemandRun['firstList'][number]) => (x: OnDemandRun) =>
    x.firstList.find((y) => y.resource === res)?.[k] as number | undefined;
  if (runs.length)
    out.push(
      table(
        [
          'LIST RV=0 of all',
          'objects',
          'direct ms',
          'proxy first ms',
          'first ratio',
          'start s (→ from cache)',
          'from cache ms',
          'cache ratio',
        ],
        resources.map((res) => [
          res,
          over(runs, fl(res, 'objects'), 0),
          over(runs, fl(res, 'directMs'), 0),
          over(runs, fl(res, 'proxyFirstMs'), 0),
          over(runs, fl(res, 'firstRatio'), 2),
          over(runs, fl(res, 'startS'), 2),
          over(runs, fl(res, 'cacheMs'), 0),
          over(runs, fl(res, 'cacheRatio'), 2),
        ]),
      ),
      '',
      table(
        ['informer (client-go, watch-list, pods)', 'sync ms'],
        [
          ['direct', over(runs, (x) => x.informer.directMs, 0)],
          ['through a fresh auto proxy', over(runs, (x) => x.informer.proxyMs, 0)],
          ['ratio', over(runs, (x) => x.informer.ratio, 2)],
        ],
      ),
      '',
      table(
        ['proxy VmRSS (no forced GC)', 'MiB'],
        [
          ...(['empty', 'held', 'evicted', 'evicted, later'] as const).map((s) => [
            {
              empty: 'empty cache, before the first request',
              held: 'both caches held (synced, one watch each)',
              evicted: `both stopped as idle (${over(runs, (x) => x.evictedAfterS)} s after the watches closed)`,
              'evicted, later': `${p.secondWaitS} s later`,
            }[s],
            over(runs, (x) => x.rss.find((y) => y.stage === s)?.rssMiB),
          ]),
          ['returned by the eviction (held − later)', over(runs, (x) => x.returnedMiB)],
          ['fraction of what the caches added', over(runs, (x) => x.returnedFraction, 2)],
          ['peak (VmHWM)', over(runs, (x) => x.peakRssMiB)],
        ],
      ),
    );
  if (r.failures.length)
    out.push(
      '',
      table(
        ['failed', 'error'],
        r.failures.map((f) => [f.row, f.error.replace(/\|/g, '\\|')]),
      ),
    );
  return `${out.join('\n')}\n`;
}
