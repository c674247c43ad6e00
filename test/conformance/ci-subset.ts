/**
 * The upstream e2e specs CI runs on every `npm test` (test/e2e/conformance-subset.test.ts), direct
 * and through the proxy in sidecar mode (`--resources=auto`): API-only specs of a few seconds each
 * that cover what the proxy serves (watch, chunking, field and label selectors, server-side apply,
 * Table conversion, the ConfigMap/Secret/Lease/Event/PodTemplate APIs, namespaces, CRDs). Names are
 * the specs' full texts in k8s.io/kubernetes v1.37.2 (`e2e.test --list-tests`). Left out: the
 * StorageVersionMigration CRUD spec, whose duration swings with its update conflicts against
 * kube-controller-manager's storage-version-migrator (each costs a 2 s poll; 6.7 to 16.5 s
 * direct), so its time allowance would fail at random (docs/conformance.md).
 */

/** The specs, by full text. */
export const CI_SPECS: readonly string[] = [
  '[sig-api-machinery] Watchers should be able to restart watching from the last resource version observed by the previous watch [Conformance]',
  '[sig-api-machinery] Watchers should be able to start watching from a specific resource version [Conformance]',
  '[sig-api-machinery] Watchers should observe add, update, and delete watch notifications on configmaps [Conformance]',
  '[sig-api-machinery] Watchers should observe an object deletion if it stops meeting the requirements of the selector [Conformance]',
  '[sig-api-machinery] Servers with support for API chunking should return chunks of results for list calls [Conformance]',
  '[sig-api-machinery] Servers with support for Table transformation should return chunks of table results for list calls',
  '[sig-api-machinery] Servers with support for Table transformation should return a 406 for a backend which does not implement metadata [Conformance]',
  '[sig-api-machinery] ServerSideApply should create an applied object if it does not already exist',
  '[sig-api-machinery] ServerSideApply should work for CRDs',
  '[sig-api-machinery] FieldValidation should detect unknown and duplicate fields of a typed object [Conformance]',
  '[sig-api-machinery] client-go should negotiate watch and report errors with accept "application/json"',
  '[sig-api-machinery] client-go should negotiate watch and report errors with accept "application/vnd.kubernetes.protobuf,application/json"',
  '[sig-node] ConfigMap should run through a ConfigMap lifecycle [Conformance]',
  '[sig-node] Secrets should patch a secret [Conformance]',
  '[sig-node] Lease lease API should be available [Conformance]',
  '[sig-node] PodTemplates should run the lifecycle of PodTemplates [Conformance]',
  '[sig-node] PodTemplates should replace a pod template [Conformance]',
  '[sig-instrumentation] Events should manage the lifecycle of an event [Conformance]',
  '[sig-instrumentation] Events API should ensure that an event can be fetched, patched, deleted, and listed [Conformance]',
  '[sig-network] EndpointSlice should support creating EndpointSlice API operations [Conformance]',
  '[sig-auth] ServiceAccounts should run through the lifecycle of a ServiceAccount [Conformance]',
  '[sig-scheduling] LimitRange should list, patch and delete a LimitRange by collection [Conformance]',
];

/**
 * A Ginkgo (RE2) focus expression matching exactly the specs named: Ginkgo matches it against
 * `"<suite description> " + spec text` (github.com/onsi/ginkgo/v2 `internal/focus.go`), so each
 * escaped name is anchored at its end and after a space.
 */
export function focusFor(names: readonly string[]): string {
  return ` (?:${names.map((n) => n.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')).join('|')})$`;
}
