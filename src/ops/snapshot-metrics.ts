/**
 * The snapshots' metrics (docs/design.md §3, "Snapshots and warm restart"; docs/operations.md):
 * loads by result, writes by result with their bytes and duration. Every label is from a closed
 * list (`snapshot/resource-snapshot.ts` `SnapshotLoadResult`, `SnapshotWriteResult`) or a
 * configured resource's group and resource.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { SnapshotMetricsHooks } from '../snapshot/resource-snapshot.ts';

/** The snapshot part of `Metrics`. */
export interface SnapshotMetrics {
  /** `kube_cache_proxy_snapshot_loads_total{group,resource,result}`: restored|absent|corrupt|truncated|version|foreign. */
  readonly snapshotLoads: Counter<'group' | 'resource' | 'result'>;
  /** `kube_cache_proxy_snapshot_writes_total{group,resource,result}`: ok|error|disk_full (disk_full stops the resource's snapshots). */
  readonly snapshotWrites: Counter<'group' | 'resource' | 'result'>;
  /** `kube_cache_proxy_snapshot_write_bytes_total{group,resource}`: bytes of the snapshots written. */
  readonly snapshotWriteBytes: Counter<'group' | 'resource'>;
  /** `kube_cache_proxy_snapshot_write_duration_seconds{group,resource}`: capture to rename, the event loop free between chunks. */
  readonly snapshotWriteDuration: Histogram<'group' | 'resource'>;
}

/** Registers the snapshot metrics on `registry` with names prefixed by `prefix`. */
export function createSnapshotMetrics(registry: Registry, prefix: string): SnapshotMetrics {
  const registers = [registry];
  const gr = ['group', 'resource'] as const;
  return {
    snapshotLoads: new Counter({
      name: `${prefix}snapshot_loads_total`,
      help: 'Snapshots read at start, by result (restored|absent|corrupt|truncated|version|foreign).',
      labelNames: [...gr, 'result'],
      registers,
    }),
    snapshotWrites: new Counter({
      name: `${prefix}snapshot_writes_total`,
      help: 'Snapshot writes, by result (ok|error|disk_full; disk_full stops the snapshots of the resource, serving goes on).',
      labelNames: [...gr, 'result'],
      registers,
    }),
    snapshotWriteBytes: new Counter({
      name: `${prefix}snapshot_write_bytes_total`,
      help: 'Bytes of the snapshots written.',
      labelNames: gr,
      registers,
    }),
    snapshotWriteDuration: new Histogram({
      name: `${prefix}snapshot_write_duration_seconds`,
      help: 'Seconds from capture to rename of a snapshot write (the event loop serves between its chunks).',
      labelNames: gr,
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers,
    }),
  };
}

/** The hooks `ResourceSnapshot` calls, counting into `m`. */
export function snapshotMetricsHooks(m: SnapshotMetrics): SnapshotMetricsHooks {
  return {
    loaded: (gr, result) => m.snapshotLoads.inc({ ...gr, result }),
    written: (gr, result, bytes, seconds) => {
      m.snapshotWrites.inc({ ...gr, result });
      if (result === 'ok') {
        m.snapshotWriteBytes.inc(gr, bytes);
        m.snapshotWriteDuration.observe(gr, seconds);
      }
    },
  };
}
