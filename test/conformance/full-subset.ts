/**
 * The whole matrix `npm run conformance` runs by default (`--subset=full`): every
 * `[sig-api-machinery]` spec (Conformance or not: watch, chunking, field selectors, server-side
 * apply, Table conversion, API streaming, resource quota, garbage collector, namespaces, CRDs,
 * admission policies, …) and the API-only specs of other sigs, one family per line. What the
 * fixture cannot run is left out by the skipped families (test/conformance/skips.ts), not here:
 * a family below is an area of the suite, its skips say why parts of it do not run.
 * Names are matched as in k8s.io/kubernetes v1.37.2 (`e2e.test --list-tests`).
 */

/** One area of the upstream suite the full run focuses on. */
export interface FocusFamily {
  /** Short name, as the report lists it. */
  family: string;
  /** Regular expression (Go RE2 syntax, also valid JavaScript) matched against the spec's full text. */
  pattern: string;
}

/** The focused areas; order is the report's. */
export const FULL_FAMILIES: readonly FocusFamily[] = [
  { family: 'API machinery (all)', pattern: '\\[sig-api-machinery\\] ' },
  {
    family: 'node: ConfigMap, Secrets, PodTemplates, Lease, Events',
    pattern: '\\[sig-node\\] (ConfigMap|Secrets|PodTemplates|Lease|Events) ',
  },
  { family: 'instrumentation: the Events APIs', pattern: '\\[sig-instrumentation\\] Events( API)? should' },
  {
    family: 'network: EndpointSlice, Ingress/IngressClass, ServiceCIDR/IPAddress, the Services API',
    pattern:
      '\\[sig-network\\] (EndpointSlice|EndpointSliceMirroring|Ingress API|IngressClass|ServiceCIDR and IPAddress API|API Server) |\\[sig-network\\] Services should (complete a service status lifecycle|delete a collection of services|find a service from listing all namespaces|check NodePort out-of-range|prevent NodePort collisions)',
  },
  {
    family: 'auth: ServiceAccounts, Certificates, SubjectReview',
    pattern: '\\[sig-auth\\] (ServiceAccounts|Certificates API|SubjectReview|SelfSubjectReview) ',
  },
  { family: 'scheduling: LimitRange', pattern: '\\[sig-scheduling\\] LimitRange ' },
  {
    family: 'storage: the CSI API objects',
    pattern:
      '\\[sig-storage\\] (CSIInlineVolumes|CSINodes|CSIStorageCapacity|VolumeAttachment|PersistentVolumes CSI Conformance) ',
  },
];

/** The `--ginkgo.focus` expression of `families` (every family's pattern, alternated). */
export function fullFocus(families: readonly FocusFamily[] = FULL_FAMILIES): string {
  return families.map((f) => `(?:${f.pattern})`).join('|');
}
