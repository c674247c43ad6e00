import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMetrics, resourceVersionGaugeValue } from '../../../src/ops/metrics.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { deploymentsStatus, FakeStatusSource, podsStatus } from '../../support/fake-status-source.ts';

const NOW = 1_700_000_010_000;

/** The sample lines (no HELP/TYPE) of one metric family. */
async function samples(m: ReturnType<typeof createMetrics>, name: string): Promise<string[]> {
  const text = await m.registry.getSingleMetricAsString(name);
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

describe('createMetrics', () => {
  it('defines exactly the documented kube_cache_proxy_ families', async () => {
    const m = createMetrics({ processMetrics: false });
    const names = (await m.registry.getMetricsAsJSON()).map((x) => `${x.name} ${x.type}`).sort();
    assert.deepEqual(names, [
      'kube_cache_proxy_audit_error_total counter',
      'kube_cache_proxy_audit_event_total counter',
      'kube_cache_proxy_audit_level_total counter',
      'kube_cache_proxy_authentication_attempts_total counter',
      'kube_cache_proxy_authorization_decisions_total counter',
      'kube_cache_proxy_compaction_probes_total counter',
      'kube_cache_proxy_metric_series_folded_total counter',
      'kube_cache_proxy_on_demand_caches_total counter',
      'kube_cache_proxy_outage_grace_decisions_total counter',
      'kube_cache_proxy_reflector_last_progress_timestamp_seconds gauge',
      'kube_cache_proxy_reflector_last_sync_timestamp_seconds gauge',
      'kube_cache_proxy_reflector_relists_total counter',
      'kube_cache_proxy_reflector_synced gauge',
      'kube_cache_proxy_reflector_upstream_live gauge',
      'kube_cache_proxy_reflector_watch_list_fallbacks_total counter',
      'kube_cache_proxy_reflector_watch_restarts_total counter',
      'kube_cache_proxy_registered_watchers gauge',
      'kube_cache_proxy_request_duration_seconds histogram',
      'kube_cache_proxy_requests_filtered_total counter',
      'kube_cache_proxy_requests_refused_total counter',
      'kube_cache_proxy_requests_total counter',
      'kube_cache_proxy_snapshot_loads_total counter',
      'kube_cache_proxy_snapshot_write_bytes_total counter',
      'kube_cache_proxy_snapshot_write_duration_seconds histogram',
      'kube_cache_proxy_snapshot_writes_total counter',
      'kube_cache_proxy_terminated_watchers_total counter',
      'kube_cache_proxy_upstream_request_duration_seconds histogram',
      'kube_cache_proxy_upstream_requests_total counter',
      'kube_cache_proxy_watch_cache_bytes gauge',
      'kube_cache_proxy_watch_cache_capacity gauge',
      'kube_cache_proxy_watch_cache_events_dispatched_total counter',
      'kube_cache_proxy_watch_cache_events_received_total counter',
      'kube_cache_proxy_watch_cache_history_bytes gauge',
      'kube_cache_proxy_watch_cache_history_events gauge',
      'kube_cache_proxy_watch_cache_info gauge',
      'kube_cache_proxy_watch_cache_last_used_timestamp_seconds gauge',
      'kube_cache_proxy_watch_cache_objects gauge',
      'kube_cache_proxy_watch_cache_oldest_resource_version_age_seconds gauge',
      'kube_cache_proxy_watch_cache_read_wait_seconds histogram',
      'kube_cache_proxy_watch_cache_resource_version gauge',
      'kube_cache_proxy_watch_cache_scope_info gauge',
      'kube_cache_proxy_watch_cache_stalled_watchers gauge',
      'kube_cache_proxy_watch_cache_started_timestamp_seconds gauge',
      'kube_cache_proxy_watch_cache_watcher_catchup_events histogram',
      'kube_cache_proxy_watch_cache_watcher_catchup_rounds_total counter',
      'kube_cache_proxy_watch_cache_watcher_stalls_total counter',
      'kube_cache_proxy_webhook_cache_requests_total counter',
    ]);
  });

  it('computes state gauges from the status source at scrape time', async () => {
    const source = new FakeStatusSource([
      podsStatus({ scope: '[fieldSelector=spec.nodeName=n1]', parkedWatchers: 1 }),
      deploymentsStatus(),
    ]);
    const m = createMetrics({ processMetrics: false, clock: new FakeClock(NOW), source });
    const pods = 'group="",resource="pods"';
    const deps = 'group="apps",resource="deployments"';
    assert.deepEqual(await samples(m, 'kube_cache_proxy_reflector_synced'), [
      `kube_cache_proxy_reflector_synced{${pods}} 1`,
      `kube_cache_proxy_reflector_synced{${deps}} 0`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_reflector_upstream_live'), [
      `kube_cache_proxy_reflector_upstream_live{${pods}} 1`,
      `kube_cache_proxy_reflector_upstream_live{${deps}} 0`,
    ]);
    // Null timestamps and an unparsable RV export no series rather than a misleading 0.
    assert.deepEqual(await samples(m, 'kube_cache_proxy_reflector_last_sync_timestamp_seconds'), [
      `kube_cache_proxy_reflector_last_sync_timestamp_seconds{${pods}} 1700000000`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_reflector_last_progress_timestamp_seconds'), [
      `kube_cache_proxy_reflector_last_progress_timestamp_seconds{${pods}} 1700000005`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_resource_version'), [
      `kube_cache_proxy_watch_cache_resource_version{${pods}} 1234`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_objects'), [
      `kube_cache_proxy_watch_cache_objects{${pods}} 3`,
      `kube_cache_proxy_watch_cache_objects{${deps}} 0`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_bytes'), [
      `kube_cache_proxy_watch_cache_bytes{${pods}} 4096`,
      `kube_cache_proxy_watch_cache_bytes{${deps}} 0`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_capacity'), [
      `kube_cache_proxy_watch_cache_capacity{${pods}} 100`,
      `kube_cache_proxy_watch_cache_capacity{${deps}} 100`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_history_events'), [
      `kube_cache_proxy_watch_cache_history_events{${pods}} 10`,
      `kube_cache_proxy_watch_cache_history_events{${deps}} 0`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_history_bytes'), [
      `kube_cache_proxy_watch_cache_history_bytes{${pods}} 2048`,
      `kube_cache_proxy_watch_cache_history_bytes{${deps}} 0`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_oldest_resource_version_age_seconds'), [
      `kube_cache_proxy_watch_cache_oldest_resource_version_age_seconds{${pods}} 20`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_scope_info'), [
      `kube_cache_proxy_watch_cache_scope_info{${pods},scope="[fieldSelector=spec.nodeName=n1]"} 1`,
      `kube_cache_proxy_watch_cache_scope_info{${deps},scope=""} 1`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_registered_watchers'), [
      `kube_cache_proxy_registered_watchers{${pods}} 2`,
      `kube_cache_proxy_registered_watchers{${deps}} 0`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_stalled_watchers'), [
      `kube_cache_proxy_watch_cache_stalled_watchers{${pods}} 1`,
      `kube_cache_proxy_watch_cache_stalled_watchers{${deps}} 0`,
    ]);
  });

  it('drops series of resources that left the source and follows setStatusSource', async () => {
    const m = createMetrics({ processMetrics: false });
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_objects'), []);
    const source = new FakeStatusSource([podsStatus(), deploymentsStatus()]);
    m.setStatusSource(source);
    assert.equal((await samples(m, 'kube_cache_proxy_watch_cache_objects')).length, 2);
    source.list = [podsStatus({ objects: 7 })];
    assert.deepEqual(await samples(m, 'kube_cache_proxy_watch_cache_objects'), [
      'kube_cache_proxy_watch_cache_objects{group="",resource="pods"} 7',
    ]);
  });

  it('counts pushed events with typed labels', async () => {
    const m = createMetrics({ processMetrics: false });
    m.upstreamRequests.inc({ verb: 'LIST', group: '', resource: 'pods', code: '200' });
    m.upstreamRequests.inc({ verb: 'WATCH', group: '', resource: 'pods', code: '<error>' }, 2);
    m.terminatedWatchers.inc({ group: '', resource: 'pods', reason: 'resource_expired' });
    m.requests.inc({
      verb: 'LIST',
      group: '',
      version: 'v1',
      resource: 'pods',
      subresource: '',
      code: '200',
      served_from: 'cache',
      reason: '',
    });
    assert.deepEqual(await samples(m, 'kube_cache_proxy_upstream_requests_total'), [
      'kube_cache_proxy_upstream_requests_total{verb="LIST",group="",resource="pods",code="200"} 1',
      'kube_cache_proxy_upstream_requests_total{verb="WATCH",group="",resource="pods",code="<error>"} 2',
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_terminated_watchers_total'), [
      'kube_cache_proxy_terminated_watchers_total{group="",resource="pods",reason="resource_expired"} 1',
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_requests_total'), [
      'kube_cache_proxy_requests_total{verb="LIST",group="",version="v1",resource="pods",subresource="",code="200",served_from="cache",reason=""} 1',
    ]);
  });

  it('mirrors the reflector counters (relists by reason, watch restarts, fallbacks) at scrape time', async () => {
    const source = new FakeStatusSource([
      podsStatus({ relists: { expired: 2, very_short_watch: 1 }, watchRestarts: 5, watchListFallbacks: 1 }),
      deploymentsStatus({ relists: {}, watchRestarts: 0 }),
    ]);
    const m = createMetrics({ processMetrics: false, source });
    const pods = 'group="",resource="pods"';
    const deps = 'group="apps",resource="deployments"';
    // `initial` counts the first snapshot once synced; the reflector's reasons are the label values as they are.
    assert.deepEqual(await samples(m, 'kube_cache_proxy_reflector_relists_total'), [
      `kube_cache_proxy_reflector_relists_total{${pods},reason="initial"} 1`,
      `kube_cache_proxy_reflector_relists_total{${pods},reason="expired"} 2`,
      `kube_cache_proxy_reflector_relists_total{${pods},reason="very_short_watch"} 1`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_reflector_watch_restarts_total'), [
      `kube_cache_proxy_reflector_watch_restarts_total{${pods}} 5`,
      `kube_cache_proxy_reflector_watch_restarts_total{${deps}} 0`,
    ]);
    assert.deepEqual(await samples(m, 'kube_cache_proxy_reflector_watch_list_fallbacks_total'), [
      `kube_cache_proxy_reflector_watch_list_fallbacks_total{${pods}} 1`,
      `kube_cache_proxy_reflector_watch_list_fallbacks_total{${deps}} 0`,
    ]);
    // A later scrape reflects the new counts, not a sum of scrapes.
    source.list = [podsStatus({ relists: { expired: 3 }, watchRestarts: 6 })];
    assert.deepEqual(await samples(m, 'kube_cache_proxy_reflector_relists_total'), [
      `kube_cache_proxy_reflector_relists_total{${pods},reason="initial"} 1`,
      `kube_cache_proxy_reflector_relists_total{${pods},reason="expired"} 3`,
    ]);
  });

  it('a warm start (restored from a snapshot) counts no initial LIST; a refused snapshot counts one LIST', async () => {
    const pods = 'group="",resource="pods"';
    const warm = createMetrics({
      processMetrics: false,
      source: new FakeStatusSource([podsStatus({ warmStart: true, relists: {} })]),
    });
    assert.deepEqual(await samples(warm, 'kube_cache_proxy_reflector_relists_total'), []);
    const refused = createMetrics({
      processMetrics: false,
      source: new FakeStatusSource([podsStatus({ warmStart: true, relists: { snapshot_refused: 1 } })]),
    });
    assert.deepEqual(await samples(refused, 'kube_cache_proxy_reflector_relists_total'), [
      `kube_cache_proxy_reflector_relists_total{${pods},reason="snapshot_refused"} 1`,
    ]);
  });

  it('uses the apiserver read-wait buckets', async () => {
    const m = createMetrics({ processMetrics: false });
    m.readWait.observe({ group: '', resource: 'pods', result: 'fresh' }, 0.03);
    const lines = await samples(m, 'kube_cache_proxy_watch_cache_read_wait_seconds');
    assert.equal(
      lines[0],
      'kube_cache_proxy_watch_cache_read_wait_seconds_bucket{le="0.005",group="",resource="pods",result="fresh"} 0',
    );
    assert.equal(
      lines[2],
      'kube_cache_proxy_watch_cache_read_wait_seconds_bucket{le="0.05",group="",resource="pods",result="fresh"} 1',
    );
    assert.equal(
      lines.at(-1),
      'kube_cache_proxy_watch_cache_read_wait_seconds_count{group="",resource="pods",result="fresh"} 1',
    );
  });

  it('keeps registries independent and includes process metrics by default', async () => {
    const a = createMetrics();
    const b = createMetrics({ processMetrics: false });
    a.eventsDispatched.inc({ group: '', resource: 'pods' });
    assert.deepEqual(await samples(b, 'kube_cache_proxy_watch_cache_events_dispatched_total'), []);
    const text = await a.scrape();
    assert.match(text, /^process_resident_memory_bytes \d+/m);
    assert.match(text, /^nodejs_heap_size_used_bytes \d+/m);
    assert.match(
      text,
      /^kube_cache_proxy_watch_cache_events_dispatched_total\{group="",resource="pods"\} 1$/m,
    );
    assert.doesNotMatch(await b.scrape(), /process_resident_memory_bytes/);
  });
});

describe('resourceVersionGaugeValue', () => {
  it('keeps the 15 least significant digits like the apiserver', () => {
    assert.equal(resourceVersionGaugeValue('42'), 42);
    assert.equal(resourceVersionGaugeValue('18446744073709551615'), 744_073_709_551_615);
    assert.equal(resourceVersionGaugeValue('1000000000000000'), 0);
  });
  it('rejects RVs that are not decimal integers', () => {
    assert.equal(resourceVersionGaugeValue(''), undefined);
    assert.equal(resourceVersionGaugeValue('abc'), undefined);
    assert.equal(resourceVersionGaugeValue('-1'), undefined);
    assert.equal(resourceVersionGaugeValue('1.5'), undefined);
  });
});
