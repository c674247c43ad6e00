/**
 * Which Table printer answers a cached resource: a built-in kind's port (`printers/registry.ts`),
 * or a custom resource's columns from its CustomResourceDefinition as the cache holds it (the
 * `customresourcedefinitions.apiextensions.k8s.io` v1 cache, synced: the apiextensions-apiserver
 * reads the CRD from its informer the same way). Undefined when there is none: the CRDs are not
 * cached, the CRD is not (yet) in the cache, or its columns use what the JSONPath port lacks; the
 * request then passes upstream (`table-printer`).
 */
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { customResourcePrinter } from '../printers/custom-resource.ts';
import { tablePrinter } from '../printers/registry.ts';
import type { TablePrinter } from '../printers/table-types.ts';
import type { CachedObject } from './cache-api.ts';
import type { CacheRegistry } from './cache-registry.ts';

/** Printers per cached CRD object (immutable per resourceVersion), per version. */
const printers = new WeakMap<CachedObject, Map<string, TablePrinter | undefined>>();

/** The Table printer of resource `r` (see the module's docstring). */
export function tablePrinterOf(registry: CacheRegistry, r: ResourceInfo): TablePrinter | undefined {
  if (r.builtIn) return tablePrinter(r.gvr.group, r.gvr.resource);
  const crds = registry.lookup('apiextensions.k8s.io', 'v1', 'customresourcedefinitions');
  if (!crds?.isSynced()) return undefined;
  const crd = crds.get(undefined, `${r.gvr.resource}.${r.gvr.group}`);
  if (!crd) return undefined;
  let byVersion = printers.get(crd);
  if (!byVersion) {
    byVersion = new Map();
    printers.set(crd, byVersion);
  }
  if (byVersion.has(r.gvr.version)) return byVersion.get(r.gvr.version);
  const bytes = crd.wire.length === 1 ? crd.wire[0]! : Buffer.concat(crd.wire);
  const p = customResourcePrinter(JSON.parse(bytes.toString('utf8')), r.gvr.version);
  byVersion.set(r.gvr.version, p);
  return p;
}
