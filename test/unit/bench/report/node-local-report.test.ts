import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderNodeLocal } from '../../../../bench/report/node-local-report.ts';
import type { NodeLocalRow } from '../../../../bench/report/results.ts';
import { NODE_LOCAL_QUICK, poolCountersOf } from '../../../../bench/scenarios/node-local.ts';

const METRICS = `# HELP kube_cache_proxy_requests_total Requests
# TYPE kube_cache_proxy_requests_total counter
kube_cache_proxy_requests_total{verb="LIST",resource="pods",served_from="cache",reason=""} 40
kube_cache_proxy_requests_total{verb="WATCH",resource="pods",served_from="cache",reason=""} 20
kube_cache_proxy_requests_total{verb="LIST",resource="pods",served_from="upstream",reason="not-live"} 7
kube_cache_proxy_requests_total{verb="LIST",resource="services",served_from="upstream",reason="not-live"} 2
# HELP kube_cache_proxy_reflector_relists_total Snapshots
# TYPE kube_cache_proxy_reflector_relists_total counter
kube_cache_proxy_reflector_relists_total{group="",resource="pods",reason="initial"} 1
kube_cache_proxy_reflector_relists_total{group="",resource="services",reason="initial"} 1
kube_cache_proxy_reflector_relists_total{group="",resource="pods",reason="expired"} 1
`;

test('poolCountersOf sums requests by served_from/reason and relists by reason', () => {
  assert.deepEqual(poolCountersOf(METRICS), {
    poolRequests: { 'cache/': 60, 'upstream/not-live': 9 },
    poolRelists: { initial: 2, expired: 1 },
  });
  assert.throws(() => poolCountersOf('kube_cache_proxy_requests_total{a="b"} x\n'), /unparsable/);
});

test('renderNodeLocal names the pool row requests by reason, largest first', () => {
  const row = { mode: 'node proxies + pool', ...poolCountersOf(METRICS) } as unknown as NodeLocalRow;
  const md = renderNodeLocal({
    params: NODE_LOCAL_QUICK,
    idleApiserverCores: 0.02,
    rows: [{ ...row, agentWatches: 1, apiserverWatches: 3, events: 5, syncS: 1, proxyCpuS: 1 }],
    failures: [],
  });
  assert.match(
    md,
    /The pool's requests in the `node proxies \+ pool` row, by served_from\/reason: cache\/ 60, upstream\/not-live 9; its relists: initial 2, expired 1\./,
  );
});
