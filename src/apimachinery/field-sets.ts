/**
 * The fields a `fieldSelector` can name, per kind, as the apiserver's registries define them:
 * `pkg/registry/core/pod/strategy.go` (`ToSelectableFields`), `core/event/strategy.go`,
 * `core/secret/strategy.go`, `core/namespace/strategy.go`, `core/node/strategy.go`,
 * `core/replicationcontroller/strategy.go`, `apps/replicaset/strategy.go`, and
 * `apiserver/pkg/registry/generic/matcher.go` (`ObjectMetaFieldsSet`) for every other resource.
 * A field outside these sets is one the cache cannot evaluate: the request goes upstream.
 */
import type { ResourceInfo } from './gvr.ts';
import type { KubeObject } from './object.ts';

/** A `fields.Set`: field path → value. A missing field reads as "" (`fields.Set.Get`). */
export type FieldSet = Readonly<Record<string, string>>;

type Extractor = (obj: KubeObject) => Record<string, string>;

interface KindFields {
  /** Every field the registry accepts and this module computes (besides metadata.*). */
  fields: readonly string[];
  extract: Extractor;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function rec(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : {};
}

function intString(v: unknown): string {
  return typeof v === 'number' ? String(v) : '0';
}

const POD: KindFields = {
  fields: [
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.nominatedNodeName',
  ],
  extract(obj) {
    const spec = rec(obj.spec);
    const status = rec(obj.status);
    const podIPs = Array.isArray(status.podIPs) ? status.podIPs : [];
    return {
      'spec.nodeName': str(spec.nodeName),
      'spec.restartPolicy': str(spec.restartPolicy),
      'spec.schedulerName': str(spec.schedulerName),
      'spec.serviceAccountName': str(spec.serviceAccountName),
      'spec.hostNetwork': spec.hostNetwork === true ? 'true' : 'false',
      'status.phase': str(status.phase),
      // The registry takes podIPs[0], not the legacy podIP field.
      'status.podIP': podIPs.length > 0 ? str(rec(podIPs[0]).ip) : '',
      'status.nominatedNodeName': str(status.nominatedNodeName),
    };
  },
};

const EVENT: KindFields = {
  fields: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
  extract(obj) {
    const io = rec(obj.involvedObject);
    const reporting = str(obj.reportingComponent);
    return {
      'involvedObject.kind': str(io.kind),
      'involvedObject.namespace': str(io.namespace),
      'involvedObject.name': str(io.name),
      'involvedObject.uid': str(io.uid),
      'involvedObject.apiVersion': str(io.apiVersion),
      'involvedObject.resourceVersion': str(io.resourceVersion),
      'involvedObject.fieldPath': str(io.fieldPath),
      reason: str(obj.reason),
      reportingComponent: reporting,
      source: str(rec(obj.source).component) || reporting,
      type: str(obj.type),
    };
  },
};

const SECRET: KindFields = {
  fields: ['type'],
  extract: (obj) => ({ type: str(obj.type) }),
};

const NAMESPACE: KindFields = {
  // `name` is a legacy alias the namespace registry still sets.
  fields: ['status.phase', 'name'],
  extract: (obj) => ({ 'status.phase': str(rec(obj.status).phase), name: obj.metadata.name }),
};

const NODE: KindFields = {
  fields: ['spec.unschedulable'],
  extract: (obj) => ({ 'spec.unschedulable': rec(obj.spec).unschedulable === true ? 'true' : 'false' }),
};

const REPLICAS: KindFields = {
  fields: ['status.replicas'],
  extract: (obj) => ({ 'status.replicas': intString(rec(obj.status).replicas) }),
};

const BY_RESOURCE: ReadonlyMap<string, KindFields> = new Map([
  ['/v1/pods', POD],
  ['/v1/events', EVENT],
  ['/v1/secrets', SECRET],
  ['/v1/namespaces', NAMESPACE],
  ['/v1/nodes', NODE],
  ['/v1/replicationcontrollers', REPLICAS],
  ['apps/v1/replicasets', REPLICAS],
]);

function kindFields(resource: ResourceInfo): KindFields | undefined {
  const { group, version, resource: plural } = resource.gvr;
  return BY_RESOURCE.get(`${group}/${version}/${plural}`);
}

/** Whether a field selector on `field` can be evaluated by the cache for `resource`. */
export function isSelectableField(resource: ResourceInfo, field: string): boolean {
  if (field === 'metadata.name' || field === 'metadata.namespace') return true;
  return kindFields(resource)?.fields.includes(field) ?? false;
}

/**
 * The `fields.Set` of an object (`ToSelectableFields` + `ObjectMetaFieldsSet`): `metadata.name`,
 * `metadata.namespace` for namespaced resources, and the kind's own fields.
 */
export function selectableFields(resource: ResourceInfo, obj: KubeObject): FieldSet {
  const kf = kindFields(resource);
  const set: Record<string, string> = kf ? kf.extract(obj) : {};
  set['metadata.name'] = obj.metadata.name;
  if (resource.namespaced) set['metadata.namespace'] = obj.metadata.namespace ?? '';
  return set;
}

/**
 * Fields with a secondary index in the store (apiserver: `pod.Indexers` on `spec.nodeName`).
 * Used for `=` terms only, like the cacher's `storage.IndexerFuncs`.
 */
export function indexedFields(resource: ResourceInfo): readonly string[] {
  const { group, resource: plural } = resource.gvr;
  return group === '' && plural === 'pods' ? ['spec.nodeName'] : [];
}
