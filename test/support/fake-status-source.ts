/** A fake `CacheStatusSource` (src/ops/metrics.ts) and `ResourceStatus` builders, for the ops unit tests. */
import type { CacheStatusSource, ResourceStatus } from '../../src/ops/metrics.ts';

/** A ResourceStatus for `pods` with every field set; override what a test cares about. */
export function podsStatus(over: Partial<ResourceStatus> = {}): ResourceStatus {
  return {
    gvr: { group: '', version: 'v1', resource: 'pods' },
    synced: true,
    live: true,
    resourceVersion: '1234',
    lastSyncTimeMs: 1_700_000_000_000,
    lastProgressTimeMs: 1_700_000_005_000,
    objects: 3,
    bytes: 4096,
    historyEvents: 10,
    historyCapacity: 100,
    historyBytes: 2048,
    oldestResourceVersion: '1200',
    oldestEventTimeMs: 1_699_999_990_000,
    watchers: 2,
    ...over,
  };
}

/** A ResourceStatus for `deployments.apps`, not yet synced. */
export function deploymentsStatus(over: Partial<ResourceStatus> = {}): ResourceStatus {
  return {
    gvr: { group: 'apps', version: 'v1', resource: 'deployments' },
    synced: false,
    live: false,
    resourceVersion: '',
    lastSyncTimeMs: null,
    lastProgressTimeMs: null,
    objects: 0,
    bytes: 0,
    historyEvents: 0,
    historyCapacity: 100,
    historyBytes: 0,
    oldestResourceVersion: '',
    oldestEventTimeMs: null,
    watchers: 0,
    ...over,
  };
}

/** A mutable fake source: tests assign `list` between requests. */
export class FakeStatusSource implements CacheStatusSource {
  list: ResourceStatus[];
  constructor(list: ResourceStatus[] = []) {
    this.list = list;
  }
  resources(): ResourceStatus[] {
    return this.list;
  }
}
