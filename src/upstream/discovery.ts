/**
 * Resource discovery against the upstream's `/api` and `/apis`, as kubectl's RESTMapper does it.
 * Exports {@link parseResourceName} (kubectl's `resource[.version][.group]`),
 * {@link discoverResource}, and the built-in-group rule ({@link isBuiltInGroup},
 * {@link BUILT_IN_DOTTED_GROUPS}) taken from kube-apiserver's `pkg/controlplane` storage providers.
 */
import type { GroupVersionResource, ResourceInfo } from '../apimachinery/gvr.ts';
import { DiscoveryError, UpstreamError } from '../util/errors.ts';
import type { Upstream } from './connection.ts';
import { upstreamGetBuffer } from './request.ts';

/**
 * Groups compiled into kube-apiserver whose names contain a dot. Together with the dot-less
 * groups (core "", apps, batch, autoscaling, policy, extensions) these are the built-in types,
 * whose LIST items the apiserver writes without `kind`/`apiVersion`.
 *
 * Rule (documented choice): builtIn = group has no '.' OR group is in this set. Every other
 * group is treated as served by a CRD or an aggregated API, including unknown `*.k8s.io`
 * groups such as `gateway.networking.k8s.io` or `metrics.k8s.io`, which are CRDs / aggregated
 * in practice. A wrong guess only changes whether LIST items carry kind/apiVersion.
 * Source: kube-apiserver `pkg/controlplane/apiserver/options` + `pkg/controlplane/instance.go`
 * REST storage providers (v1.37).
 */
export const BUILT_IN_DOTTED_GROUPS: ReadonlySet<string> = new Set([
  'admissionregistration.k8s.io',
  'apiextensions.k8s.io',
  'apiregistration.k8s.io',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'certificates.k8s.io',
  'coordination.k8s.io',
  'discovery.k8s.io',
  'events.k8s.io',
  'flowcontrol.apiserver.k8s.io',
  'internal.apiserver.k8s.io',
  'networking.k8s.io',
  'node.k8s.io',
  'rbac.authorization.k8s.io',
  'resource.k8s.io',
  'scheduling.k8s.io',
  'storage.k8s.io',
  'storagemigration.k8s.io',
]);

/** See {@link BUILT_IN_DOTTED_GROUPS}. */
export function isBuiltInGroup(group: string): boolean {
  return !group.includes('.') || BUILT_IN_DOTTED_GROUPS.has(group);
}

/** `pods` → {resource: pods, group: ""}; `deployments.apps`; `widgets.v1.example.com` (explicit version). */
export interface ResourceName {
  resource: string;
  group: string;
  /** Only when the name spells it (`resource.version.group`); otherwise the preferred version. */
  version?: string;
}

/** Parses how the CLI names a resource (kubectl's `resource[.version][.group]`). */
export function parseResourceName(name: string): ResourceName {
  const parts = name.trim().toLowerCase().split('.');
  const resource = parts[0] ?? '';
  if (!/^[a-z0-9-]+$/.test(resource))
    throw new DiscoveryError('KCP_ERR_DISCOVERY_INVALID_NAME', name, `invalid resource name "${name}"`);
  const rest = parts.slice(1);
  if (rest.length >= 2 && /^v\d+((alpha|beta)\d+)?$/.test(rest[0] ?? '')) {
    return { resource, version: rest[0]!, group: rest.slice(1).join('.') };
  }
  if (rest.length === 1 && /^v\d+((alpha|beta)\d+)?$/.test(rest[0] ?? '')) {
    return { resource, version: rest[0]!, group: '' };
  }
  return { resource, group: rest.join('.') };
}

interface APIResource {
  name: string;
  kind: string;
  namespaced: boolean;
  verbs?: string[];
  group?: string;
  version?: string;
}

/**
 * Resolves a configured resource name to its {@link ResourceInfo} through `/api` and `/apis`
 * (the preferred version unless the name spells one), like kubectl's RESTMapper.
 * Throws {@link DiscoveryError}: `KCP_ERR_DISCOVERY_NOT_FOUND` (group, version or resource not
 * served — e.g. a CRD not installed yet; `groupVersionMissing` when the group-version is not), `KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE` (no list+watch
 * verbs), `KCP_ERR_DISCOVERY_FAILED` (discovery request failed). Callers retry with backoff so a CRD installed later is picked up.
 */
export async function discoverResource(
  up: Upstream,
  name: string,
  signal?: AbortSignal,
): Promise<ResourceInfo> {
  const rn = parseResourceName(name);
  const fetchJson = async <T>(path: string): Promise<T | undefined> => {
    try {
      return JSON.parse((await upstreamGetBuffer(up, path, {}, signal)).toString('utf8')) as T;
    } catch (err) {
      if (err instanceof UpstreamError && err.statusCode === 404) return undefined;
      throw new DiscoveryError(
        'KCP_ERR_DISCOVERY_FAILED',
        name,
        `discovery of "${name}" failed: ${(err as Error).message}`,
        err,
      );
    }
  };
  let version = rn.version;
  if (!version) {
    if (rn.group === '') {
      const core = await fetchJson<{ versions?: string[] }>('/api');
      version = core?.versions?.[0];
    } else {
      const list = await fetchJson<{ groups?: { name: string; preferredVersion?: { version: string } }[] }>(
        '/apis',
      );
      version = list?.groups?.find((g) => g.name === rn.group)?.preferredVersion?.version;
    }
    if (!version) {
      const err = new DiscoveryError(
        'KCP_ERR_DISCOVERY_NOT_FOUND',
        name,
        `resource "${name}": API group "${rn.group || 'core'}" is not served upstream`,
      );
      err.groupVersionMissing = true;
      throw err;
    }
  }
  const gvPath = rn.group === '' ? `/api/${version}` : `/apis/${rn.group}/${version}`;
  const rl = await fetchJson<{ resources?: APIResource[] }>(gvPath);
  const r = rl?.resources?.find((x) => x.name === rn.resource);
  if (!r) {
    const err = new DiscoveryError(
      'KCP_ERR_DISCOVERY_NOT_FOUND',
      name,
      `resource "${name}" is not served upstream (not in ${gvPath})`,
    );
    err.groupVersionMissing = rl === undefined;
    throw err;
  }
  const verbs = r.verbs ?? [];
  if (!verbs.includes('list') || !verbs.includes('watch')) {
    throw new DiscoveryError(
      'KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE',
      name,
      `resource "${name}" cannot be cached: it must support list and watch (verbs: ${verbs.join(',') || 'none'})`,
    );
  }
  const gvr: GroupVersionResource = { group: rn.group, version, resource: rn.resource };
  return {
    gvr,
    kind: r.kind,
    listKind: `${r.kind}List`,
    apiVersion: rn.group === '' ? version : `${rn.group}/${version}`,
    namespaced: r.namespaced,
    verbs,
    builtIn: isBuiltInGroup(rn.group),
  };
}

/** One served (group, version, resource[, subresource]) as discovery lists it; subresource "" for none. */
export interface ServedResource {
  group: string;
  version: string;
  resource: string;
  subresource: string;
}

/**
 * `Accept` of aggregated discovery, as client-go's `discovery.AcceptV2` (v2, then the legacy
 * answer): the apiserver answers `/api` and `/apis` with every group, version, resource and
 * subresource in one `APIGroupDiscoveryList` each (GA since 1.30).
 */
export const AGGREGATED_DISCOVERY_ACCEPT =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

interface AggregatedDiscovery {
  kind?: string;
  items?: {
    metadata?: { name?: string };
    versions?: {
      version: string;
      resources?: { resource: string; subresources?: { subresource: string }[] }[];
    }[];
  }[];
}

/**
 * Every resource and subresource the apiserver serves, in every served version: aggregated
 * discovery (`/api` and `/apis` with {@link AGGREGATED_DISCOVERY_ACCEPT}: two requests, as
 * client-go's `discovery.ServerGroupsAndResources`); an apiserver that answers the legacy
 * `APIVersions`/`APIGroupList` instead is asked for each group-version's `APIResourceList`
 * (`pods/status` names a subresource there). A group-version whose list fails is left out.
 * Throws {@link DiscoveryError} `KCP_ERR_DISCOVERY_FAILED` when `/api` or `/apis` fails.
 */
export async function discoverServedResources(up: Upstream, signal?: AbortSignal): Promise<ServedResource[]> {
  const out: ServedResource[] = [];
  const get = async (path: string, accept?: string): Promise<unknown> => {
    try {
      return JSON.parse((await upstreamGetBuffer(up, path, {}, signal, accept)).toString('utf8'));
    } catch (err) {
      throw new DiscoveryError(
        'KCP_ERR_DISCOVERY_FAILED',
        path,
        `discovery of ${path} failed: ${(err as Error).message}`,
        err,
      );
    }
  };
  const legacyGroupVersions: { group: string; version: string }[] = [];
  for (const root of ['/api', '/apis']) {
    const d = (await get(root, AGGREGATED_DISCOVERY_ACCEPT)) as AggregatedDiscovery & {
      versions?: string[];
      groups?: { name: string; versions?: { version: string }[] }[];
    };
    if (d.kind === 'APIGroupDiscoveryList') {
      for (const g of d.items ?? [])
        for (const v of g.versions ?? [])
          for (const r of v.resources ?? []) {
            const group = g.metadata?.name ?? '';
            out.push({ group, version: v.version, resource: r.resource, subresource: '' });
            for (const s of r.subresources ?? [])
              out.push({ group, version: v.version, resource: r.resource, subresource: s.subresource });
          }
    } else if (root === '/api') {
      for (const version of d.versions ?? []) legacyGroupVersions.push({ group: '', version });
    } else {
      for (const g of d.groups ?? [])
        for (const v of g.versions ?? []) legacyGroupVersions.push({ group: g.name, version: v.version });
    }
  }
  for (const { group, version } of legacyGroupVersions) {
    const path = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    const rl = (await get(path).catch(() => undefined)) as { resources?: { name: string }[] } | undefined;
    for (const r of rl?.resources ?? []) {
      const [resource = '', subresource = ''] = r.name.split('/', 2);
      out.push({ group, version, resource, subresource });
    }
  }
  return out;
}
