import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createMetrics } from '../../../src/ops/metrics.ts';

interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Array<{ expr: string }>;
}
const dashboard = JSON.parse(
  readFileSync(new URL('../../../deploy/grafana/kube-cache-proxy-dashboard.json', import.meta.url), 'utf8'),
) as { uid: string; panels: Panel[] };

const exprs = dashboard.panels.flatMap((p) => p.targets?.map((t) => t.expr) ?? []);
/** Metric families the dashboard queries (histogram series names folded onto their family). */
const used = new Set(
  exprs.flatMap((e) =>
    [...e.matchAll(/\b(kube_cache_proxy_[a-z_]+|process_[a-z_]+|nodejs_[a-z0-9_]+)/g)].map((m) => m[1]!),
  ),
);
const family = (n: string) => n.replace(/_(bucket|count|sum)$/, '');

describe('Grafana dashboard', () => {
  it('queries only metrics that createMetrics defines', async () => {
    const defined = new Set((await createMetrics().registry.getMetricsAsJSON()).map((m) => m.name));
    const unknown = [...used].filter((n) => !defined.has(n) && !defined.has(family(n)));
    assert.deepEqual(unknown, []);
  });

  it('shows sync state, RV lag, watchers, cache vs upstream (and why upstream) and latency', () => {
    for (const name of [
      'kube_cache_proxy_reflector_synced',
      'kube_cache_proxy_reflector_last_progress_timestamp_seconds',
      'kube_cache_proxy_watch_cache_resource_version',
      'kube_cache_proxy_registered_watchers',
      'kube_cache_proxy_terminated_watchers_total',
      'kube_cache_proxy_requests_total',
      'kube_cache_proxy_request_duration_seconds_bucket',
      'kube_cache_proxy_upstream_requests_total',
      'kube_cache_proxy_watch_cache_read_wait_seconds_bucket',
    ]) {
      assert.ok(used.has(name), `${name} is not on the dashboard`);
    }
    assert.ok(exprs.some((e) => e.includes('sum by (served_from)')));
    assert.ok(exprs.some((e) => e.includes('sum by (reason)') && e.includes('served_from="upstream"')));
  });

  it('has unique panel ids and a stable uid', () => {
    const ids = dashboard.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(dashboard.uid, 'kube-cache-proxy');
  });
});
