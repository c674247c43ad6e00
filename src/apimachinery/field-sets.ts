/**
 * The fields a `fieldSelector` can name, per kind. Two lists:
 * - ACCEPTED: what the apiserver's handler lets through before storage, copied from the field
 *   label conversion funcs (`pkg/apis/core/v1/conversion.go`, and the per-group
 *   `AddFieldLabelConversionFunc`s: batch/v1, events/v1, certificates/v1, resource/v1); kinds
 *   without one get apimachinery `runtime.DefaultMetaV1FieldSelectorConversion`
 *   (`metadata.name`, `metadata.namespace`, even on cluster-scoped kinds). Any other label is a
 *   400 from the apiserver (`field label not supported: …` from a conversion func; from the
 *   default one, kube-apiserver 1.37.2: `"spec.nodeName" is not a known field selector: only
 *   "metadata.name", "metadata.namespace"`): such requests go upstream, so the client gets that answer (issue 11 item 4; test/e2e/proxy-fidelity.test.ts checks the table
 *   against the real apiserver for every built-in kind).
 * - computed: the fields the registries put into an object's field set:
 * `pkg/registry/core/pod/strategy.go` (`ToSelectableFields`), `core/event/strategy.go`,
 * `core/secret/strategy.go`, `core/namespace/strategy.go`, `core/node/strategy.go`,
 * `core/replicationcontroller/strategy.go`, `apps/replicaset/strategy.go`, and
 * `apiserver/pkg/registry/generic/matcher.go` (`ObjectMetaFieldsSet`) for every other resource.
 * A field accepted but not computed here is one the cache cannot evaluate: the request goes
 * upstream too.
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
  // `name` is a legacy alias the namespace registry still sets (the conversion func rejects it).
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

const META = ['metadata.name', 'metadata.namespace'] as const;

/**
 * The labels each kind's field label conversion func accepts (see the module docstring), by
 * `group/version/resource`; kinds not listed accept {@link META} (the default conversion).
 */
const ACCEPTED: ReadonlyMap<string, readonly string[]> = new Map([
  [
    '/v1/pods',
    [
      ...META,
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      'spec.hostNetwork',
      'status.phase',
      'status.podIP',
      'status.podIPs',
      'status.nominatedNodeName',
      // Converted to spec.nodeName by the apiserver (old v1 clients); forwarded by the cache.
      'spec.host',
    ],
  ],
  ['/v1/nodes', ['metadata.name', 'spec.unschedulable']],
  ['/v1/replicationcontrollers', [...META, 'status.replicas']],
  ['/v1/events', [...META, ...EVENT.fields]],
  ['/v1/namespaces', ['metadata.name', 'status.phase']],
  ['/v1/secrets', [...META, 'type']],
  ['/v1/services', [...META, 'spec.clusterIP', 'spec.type']],
  ['batch/v1/jobs', [...META, 'status.successful']],
  [
    'events.k8s.io/v1/events',
    [
      ...META,
      'reason',
      'type',
      'reportingController',
      'regarding.kind',
      'regarding.namespace',
      'regarding.name',
      'regarding.uid',
      'regarding.apiVersion',
      'regarding.resourceVersion',
      'regarding.fieldPath',
    ],
  ],
  ['certificates.k8s.io/v1/certificatesigningrequests', ['metadata.name', 'spec.signerName']],
  ['certificates.k8s.io/v1/clustertrustbundles', ['metadata.name', 'spec.signerName']],
  [
    'certificates.k8s.io/v1/podcertificaterequests',
    ['metadata.name', 'spec.signerName', 'spec.podName', 'spec.nodeName'],
  ],
  ['resource.k8s.io/v1/resourceslices', ['metadata.name', 'spec.nodeName', 'spec.driver']],
]);

/**
 * The field labels the apiserver accepts in a `fieldSelector` for a built-in resource (its
 * field label conversion func; see the module docstring). CRDs also accept their
 * `selectableFields`, which the cache does not compute: those are forwarded.
 */
export function acceptedFieldLabels(group: string, version: string, resource: string): readonly string[] {
  return ACCEPTED.get(`${group}/${version}/${resource}`) ?? META;
}

/**
 * Whether a field selector on `field` can be evaluated by the cache for `resource`: the
 * apiserver accepts it for this kind AND the cache computes it. Otherwise the request goes
 * upstream (where a label the apiserver rejects gets its 400).
 */
export function isSelectableField(resource: ResourceInfo, field: string): boolean {
  const { group, version, resource: plural } = resource.gvr;
  if (!acceptedFieldLabels(group, version, plural).includes(field)) return false;
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
