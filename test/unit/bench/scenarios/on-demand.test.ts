import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderOnDemand } from '../../../../bench/report/on-demand-report.ts';
import type { OnDemandRun } from '../../../../bench/report/results.ts';
import { metricSum, ON_DEMAND_QUICK } from '../../../../bench/scenarios/on-demand.ts';

const METRICS = `# HELP kube_cache_proxy_requests_total Requests
kube_cache_proxy_requests_total{verb="LIST",group="",version="v1",resource="pods",subresource="",code="200",served_from="upstream",reason="not-cached"} 1
kube_cache_proxy_requests_total{verb="LIST",group="",version="v1",resource="pods",subresource="",code="200",served_from="cache",reason=""} 3
kube_cache_proxy_requests_total{verb="LIST",group="",version="v1",resource="configmaps",subresource="",code="200",served_from="cache",reason=""} 2
kube_cache_proxy_requests_total_other{verb="LIST",resource="pods",served_from="cache"} 100
`;

test('metricSum adds the samples whose labels match, and only of that metric', () => {
  const sum = (labels: Record<string, string>) =>
    metricSum(METRICS, 'kube_cache_proxy_requests_total', labels);
  assert.equal(sum({ verb: 'LIST', resource: 'pods', served_from: 'cache' }), 3);
  assert.equal(sum({ resource: 'pods' }), 4);
  assert.equal(sum({ served_from: 'cache' }), 5);
  assert.equal(sum({ resource: 'secrets' }), 0);
});

test('renderOnDemand shows each run and the spread of two', () => {
  const run = (k: number): OnDemandRun => ({
    firstList: [
      {
        resource: 'pods',
        objects: 500,
        responseBytes: 1000,
        directMs: 100 * k,
        proxyFirstMs: 120,
        firstRatio: 1.2,
        startS: 0.5 * k,
        resolutionMs: 25,
        polls: 10,
        cacheMs: 50,
        cacheRatio: 0.5,
      },
    ],
    rss: [
      { stage: 'empty', rssMiB: 80, atS: 1 },
      { stage: 'held', rssMiB: 120, atS: 5 },
      { stage: 'evicted', rssMiB: 110, atS: 10 },
      { stage: 'evicted, later', rssMiB: 100, atS: 13 },
    ],
    peakRssMiB: 130,
    evictedAfterS: 4,
    returnedMiB: 20,
    returnedFraction: 0.5,
    informer: { directMs: 200, proxyMs: 300, ratio: 1.5 },
    loadavg: [1, 1, 1],
  });
  const md = renderOnDemand({ params: ON_DEMAND_QUICK, runs: [run(1), run(2)], failures: [] });
  assert.match(md, /\| pods +\| 500 \/ 500 \(spread 0\) +\| 100 \/ 200 \(spread 100\)/);
  assert.match(md, /0\.5 \/ 1 \(spread 0\.5\)/);
  assert.match(md, /returned by the eviction \(held − later\) +\| 20 \/ 20 \(spread 0\)/);
});
