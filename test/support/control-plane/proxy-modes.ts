/**
 * The two ways the control-plane comparison runs its proxy (sidecar mode, the components' only
 * server): caches on demand, or a configured list of exactly the resources the components list
 * and watch.
 */

/**
 * The resources kube-controller-manager (every default controller) and kube-scheduler v1.37.2 list
 * and watch: the 62 caches `--resources=auto` started for them in the workload (its
 * `/debug/cache`), Secrets left out as `--auto-exclude` leaves them out by default.
 */
export const CONTROL_PLANE_RESOURCES =
  'apiservices.apiregistration.k8s.io,certificatesigningrequests.certificates.k8s.io,clusterrolebindings.rbac.authorization.k8s.io,clusterroles.rbac.authorization.k8s.io,clustertrustbundles.certificates.k8s.io,configmaps,controllerrevisions.apps,cronjobs.batch,csidrivers.storage.k8s.io,csinodes.storage.k8s.io,csistoragecapacities.storage.k8s.io,customresourcedefinitions.apiextensions.k8s.io,daemonsets.apps,deployments.apps,deviceclasses.resource.k8s.io,devicetaintrules.resource.k8s.io,endpoints,endpointslices.discovery.k8s.io,events,events.events.k8s.io,flowschemas.flowcontrol.apiserver.k8s.io,horizontalpodautoscalers.autoscaling,ingressclasses.networking.k8s.io,ingresses.networking.k8s.io,ipaddresses.networking.k8s.io,jobs.batch,leases.coordination.k8s.io,limitranges,mutatingadmissionpolicies.admissionregistration.k8s.io,mutatingadmissionpolicybindings.admissionregistration.k8s.io,mutatingwebhookconfigurations.admissionregistration.k8s.io,namespaces,networkpolicies.networking.k8s.io,nodes,persistentvolumeclaims,persistentvolumes,podcertificaterequests.certificates.k8s.io,poddisruptionbudgets.policy,pods,podtemplates,priorityclasses.scheduling.k8s.io,prioritylevelconfigurations.flowcontrol.apiserver.k8s.io,replicasets.apps,replicationcontrollers,resourceclaims.resource.k8s.io,resourceclaimtemplates.resource.k8s.io,resourcequotas,resourceslices.resource.k8s.io,rolebindings.rbac.authorization.k8s.io,roles.rbac.authorization.k8s.io,runtimeclasses.node.k8s.io,serviceaccounts,servicecidrs.networking.k8s.io,services,statefulsets.apps,storageclasses.storage.k8s.io,storageversionmigrations.storagemigration.k8s.io,validatingadmissionpolicies.admissionregistration.k8s.io,validatingadmissionpolicybindings.admissionregistration.k8s.io,validatingwebhookconfigurations.admissionregistration.k8s.io,volumeattachments.storage.k8s.io,volumeattributesclasses.storage.k8s.io';

/** How the proxy runs: caches on demand, the configured list, or on demand with protobuf answers off. */
export type ProxyModeName = 'auto' | 'list' | 'auto-json';

/** The mode names, for a command line. */
export const PROXY_MODES: readonly ProxyModeName[] = ['auto', 'list', 'auto-json'];

/**
 * The proxy of a mode: its `--resources` and further flags. `auto` needs no more: the default
 * `--auto-max-resources` (100) covers the components' 62 resources (50, the old default, left a
 * dozen uncached: the garbage collector and the quota controller watch every resource they can
 * delete or count, metadata only). `auto` and `list` answer the components' protobuf requests
 * protobuf from the cache (`--protobuf-answers=cache`, the default), as the apiserver answers
 * them; `auto-json` is `auto` with `--protobuf-answers=json`: JSON instead.
 */
export function proxyMode(mode: ProxyModeName): { resources: string; args: string[] } {
  if (mode === 'list') return { resources: CONTROL_PLANE_RESOURCES, args: [] };
  return {
    resources: 'auto',
    args: mode === 'auto-json' ? ['--protobuf-answers=json'] : [],
  };
}
