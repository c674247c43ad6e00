/** Builders shared by the cache unit tests. */

import assert from 'node:assert/strict';
import type { ResourceInfo } from '../../src/apimachinery/gvr.ts';
import { itemViews, type ListItems } from '../../src/apimachinery/list-items.ts';
import type { KubeObject, UpstreamObject } from '../../src/apimachinery/object.ts';
import { everythingFields, everythingLabels } from '../../src/apimachinery/selectors.ts';
import { StatusError } from '../../src/apimachinery/status.ts';
import { WatchCache, type WatchCacheOptions } from '../../src/cache/watch-cache.ts';
import { FakeClock } from './fake-clock.ts';
import { resourceInfo } from './resource-info.ts';

export const PODS: ResourceInfo = resourceInfo('v1', 'pods', 'Pod');
export const NODES: ResourceInfo = resourceInfo('v1', 'nodes', 'Node', { namespaced: false });
export const WIDGETS: ResourceInfo = resourceInfo('example.com/v1', 'widgets', 'Widget');

export interface PodSpec {
  labels?: Record<string, string>;
  nodeName?: string;
  phase?: string;
}

/** A Pod as the apiserver encodes it: kind, apiVersion, metadata, spec, status. */
export function pod(ns: string, name: string, rv: number | string, p: PodSpec = {}): UpstreamObject {
  const metadata: KubeObject['metadata'] = { name, namespace: ns, resourceVersion: String(rv) };
  if (p.labels) metadata.labels = p.labels;
  const object: KubeObject = {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata,
    spec: p.nodeName ? { nodeName: p.nodeName } : {},
    status: p.phase ? { phase: p.phase } : {},
  };
  return { raw: Buffer.from(JSON.stringify(object)), object };
}

export { drain } from './watch-drain.ts';

/** `{type, rv, name}` of each line, for compact assertions. */
export function summary(lines: string[]): string[] {
  return lines.map((l) => {
    const e = JSON.parse(l) as { type: string; object: KubeObject };
    return `${e.type} ${e.object.metadata.name ?? ''}@${e.object.metadata.resourceVersion}`;
  });
}

/** No namespace, no selector: the whole resource. */
export const ALL = { labelSelector: everythingLabels, fieldSelector: everythingFields };

/** An empty, unsynced Pod cache on a FakeClock. */
export function newCache(opts: Partial<WatchCacheOptions> = {}): { clock: FakeClock; cache: WatchCache } {
  const clock = new FakeClock();
  const cache = new WatchCache({ resource: PODS, clock, ...opts });
  return { clock, cache };
}

/** A synced cache at RV 10 holding a/p1 (app=web, node n1), a/p2 (app=db), b/p3 (app=web, node n2). */
export function seeded(opts: Partial<WatchCacheOptions> = {}): { clock: FakeClock; cache: WatchCache } {
  const c = newCache(opts);
  c.cache.replace(
    [
      pod('b', 'p3', 8, { labels: { app: 'web' }, nodeName: 'n2' }),
      pod('a', 'p1', 5, { labels: { app: 'web' }, nodeName: 'n1' }),
      pod('a', 'p2', 7, { labels: { app: 'db' } }),
    ],
    '10',
  );
  return c;
}

/** `namespace/name` of each LIST item. */
export function names(items: ListItems): string[] {
  return itemViews(items).map((b) => {
    const o = JSON.parse(String(b)) as { metadata: { namespace: string; name: string } };
    return `${o.metadata.namespace}/${o.metadata.name}`;
  });
}

/** The Status code `fn` throws; fails the test when it does not throw a StatusError. */
export function statusCode(fn: () => unknown): number {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof StatusError);
    return e.code;
  }
  assert.fail('did not throw');
}
