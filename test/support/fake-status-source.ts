/** A fake `CacheStatusSource` (src/ops/metrics.ts) and `ResourceState` builders, for the ops unit tests. */

import type { CacheStatusSource } from '../../src/ops/metrics.ts';
import type { ResourceState } from '../../src/resources/resource-state.ts';

/** A ResourceState for `pods` with every field set; override what a test cares about. */
export function podsStatus(over: Partial<ResourceState> = {}): ResourceState {
  return {
    name: 'pods',
    gvr: { group: '', version: 'v1', resource: 'pods' },
    scope: '',
    namespace: '',
    phase: 'running',
    origin: 'configured',
    startedMs: 1_699_999_000_000,
    lastUsedMs: null,
    synced: true,
    live: true,
    periodicBookmarks: true,
    resourceVersion: '1234',
    lastSyncTimeMs: 1_700_000_000_000,
    lastSyncMode: 'watch-list',
    lastProgressTimeMs: 1_700_000_005_000,
    objects: 3,
    bytes: 4096,
    historyEvents: 10,
    historyCapacity: 100,
    historyBytes: 2048,
    oldestResourceVersion: '1200',
    oldestEventTimeMs: 1_699_999_990_000,
    watchers: 2,
    terminatedWatchers: 0,
    parkedWatchers: 0,
    restoredFromMs: null,
    lastError: null,
    relists: {},
    warmStart: false,
    watchRestarts: 0,
    watchListFallbacks: 0,
    ...over,
  };
}

/** A ResourceState for `deployments.apps`, not yet synced. */
export function deploymentsStatus(over: Partial<ResourceState> = {}): ResourceState {
  return {
    name: 'deployments.apps',
    gvr: { group: 'apps', version: 'v1', resource: 'deployments' },
    scope: '',
    namespace: '',
    phase: 'running',
    origin: 'configured',
    startedMs: 1_699_999_000_000,
    lastUsedMs: null,
    synced: false,
    live: false,
    periodicBookmarks: false,
    resourceVersion: '',
    lastSyncTimeMs: null,
    lastSyncMode: null,
    lastProgressTimeMs: null,
    objects: 0,
    bytes: 0,
    historyEvents: 0,
    historyCapacity: 100,
    historyBytes: 0,
    oldestResourceVersion: '',
    oldestEventTimeMs: null,
    watchers: 0,
    terminatedWatchers: 0,
    parkedWatchers: 0,
    restoredFromMs: null,
    lastError: null,
    relists: {},
    warmStart: false,
    watchRestarts: 0,
    watchListFallbacks: 0,
    ...over,
  };
}

/** A mutable fake source: tests assign `list` between requests. */
export class FakeStatusSource implements CacheStatusSource {
  list: ResourceState[];
  constructor(list: ResourceState[] = []) {
    this.list = list;
  }
  resources(): ResourceState[] {
    return this.list;
  }
}
