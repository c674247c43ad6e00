/** Builders shared by the cache unit tests. */

import type { ResourceInfo } from '../../../src/apimachinery/gvr.ts';
import type { KubeObject, UpstreamObject } from '../../../src/apimachinery/object.ts';
import type { CacheWatcher } from '../../../src/cache/cache-watcher.ts';
import { resourceInfo } from '../../support/resource-info.ts';

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

/** Reads every line available now, without waiting. */
export function drain(w: CacheWatcher): string[] {
  const out: string[] = [];
  for (let c = w.stream.read(); c !== null; c = w.stream.read()) out.push(String(c));
  return out;
}

/** `{type, rv, name}` of each line, for compact assertions. */
export function summary(lines: string[]): string[] {
  return lines.map((l) => {
    const e = JSON.parse(l) as { type: string; object: KubeObject };
    return `${e.type} ${e.object.metadata.name ?? ''}@${e.object.metadata.resourceVersion}`;
  });
}
