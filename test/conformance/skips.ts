/**
 * What the conformance runner never runs on this fixture, one family per line with the one
 * reason: the fixture's node is KWOK (no container runs, no pod network, no kubelet files), and
 * KWOK's exec would run a pod's command ON THIS MACHINE (the runner's fixture configures no exec
 * at all, but a spec that execs is skipped all the same). {@link skipRegex} joins the patterns for
 * `--ginkgo.skip`.
 */

/** A family of upstream e2e specs the runner skips. */
export interface SkipFamily {
  /** Short name, as the report lists it. */
  family: string;
  /** Regular expression (Go RE2 syntax, also valid JavaScript) matched against the spec's full text. */
  pattern: string;
  /** Why it cannot run here. */
  reason: string;
}

/** Every skipped family; order is the report's. */
export const SKIP_FAMILIES: readonly SkipFamily[] = [
  {
    family: 'admission webhooks',
    pattern: 'AdmissionWebhook',
    reason:
      'deploys the sample-webhook image, which must really serve HTTPS to the apiserver; KWOK runs no container',
  },
  {
    family: 'conversion webhooks',
    pattern: 'CustomResourceConversionWebhook|CustomResourceFieldSelectors',
    reason: 'deploys a CRD conversion webhook that must really serve; KWOK runs no container',
  },
  {
    family: 'aggregated API servers',
    pattern: '\\bAggregator\\b|sample-apiserver|OpenAPI V3 for Aggregated APIServer',
    reason: 'deploys the sample-apiserver, which the apiserver must reach in a real container',
  },
  {
    family: 'exec into a pod',
    pattern:
      '\\[sig-apps\\] StatefulSet|\\[sig-cli\\] Kubectl (client|Port forwarding)|[Ee]xec|remote command|port.?forward|Port forwarding|attach|EndpointSlice should support a Service with multiple|EndpointSliceMirroring should mirror a custom Endpoint with multiple subsets|ServiceCIDR and IPAddress API should create Services and serve|ServiceAccounts should mount an API token',
    reason:
      "execs, attaches or port-forwards into a pod (kubectl exec, `RunHostCmd`, `ReadFileViaContainer`: the EndpointSlice multi-slice, mirroring-with-subsets and ServiceCIDR serving specs curl from an exec pod, the API-token spec reads the mounted token with exec): KWOK's exec would run the pod's command on this machine (StatefulSet specs run `mv` and `dd` on absolute paths)",
  },
  {
    family: 'container output, files and probes',
    pattern:
      'should be consumable|Downward API|\\[sig-storage\\] (Projected|EmptyDir|Secrets|ConfigMap|HostPath|Subpath)|Container Runtime|Probing container|Lifecycle [Hh]ook|Variable Expansion|Kubelet|PreStop|Sysctls|Security Context|Pods Extended|InitContainer|retrieving logs|logs|ServiceAccounts should (mount projected|set ownership|support InClusterConfig)|ServiceAccountIssuerDiscovery',
    reason: "reads a container's output, files or probe results: KWOK runs no container",
  },
  {
    family: 'a real kubelet',
    pattern: 'Events should be sent by kubelets',
    reason: "waits for the events a kubelet sends about a pod's containers; KWOK sends none",
  },
  {
    family: 'pod networking',
    pattern:
      '\\[sig-network\\] (Networking|DNS|Proxy|Conntrack|HostPort|Services should (serve|be able to|have session|create endpoints|provide|work|preserve|implement|allow|fail)|Netpol|NetworkPolicy)',
    reason: 'needs a pod network, kube-proxy and DNS; KWOK has none',
  },
  {
    family: 'disruptive, flaky',
    pattern: '\\[Disruptive\\]|\\[Flaky\\]',
    reason:
      'restarts nodes or components, or is known to be flaky upstream (`[Serial]` specs do run: the runner runs every spec one at a time)',
  },
  {
    family: 'alpha features',
    pattern: '\\[Alpha\\]|\\[Feature:',
    reason:
      'needs a feature gate or component the fixture does not enable (its feature gates are the defaults)',
  },
];

/** The `--ginkgo.skip` expression of `families` (every family's pattern, alternated). */
export function skipRegex(families: readonly SkipFamily[] = SKIP_FAMILIES): string {
  return families.map((f) => `(?:${f.pattern})`).join('|');
}

/** The family that skips spec `name`, or undefined. */
export function skipFamilyOf(
  name: string,
  families: readonly SkipFamily[] = SKIP_FAMILIES,
): SkipFamily | undefined {
  return families.find((f) => new RegExp(f.pattern).test(name));
}
