/**
 * Which resources the cache prints as the apiserver does, and with what: the ported printers
 * keyed by `group/resource` (core group without a prefix), with the apiserver's own column
 * definitions (`column-definitions.ts`, generated from its code). A resource absent here has no
 * faithful port: its Table requests go upstream (never the default convertor where the
 * apiserver has a printer). Custom resources are not here (their columns come from the CRD:
 * `custom-resource.ts`, looked up by `server/table-printers.ts`).
 */
import { COLUMN_DEFINITIONS } from './column-definitions.ts';
import { printCustomResourceDefinition, printDefault } from './convertors.ts';
import { printEvent, printEventsV1Event } from './core-event.ts';
import { printHorizontalPodAutoscaler } from './hpa.ts';
import { printIngress, printIngressClass } from './ingress.ts';
import { printNode } from './node.ts';
import { printPod } from './pod.ts';
import { printService } from './service.ts';
import {
  printConfigMap,
  printEndpointSlice,
  printLease,
  printNamespace,
  printNetworkPolicy,
  printPodDisruptionBudget,
  printRoleBinding,
  printSecret,
  printServiceAccount,
} from './simple.ts';
import { printStorageClass, storageClassPage } from './storage-class.ts';
import type { Obj, PagePrinter, PrintedRow, TablePrinter } from './table-types.ts';
import { printPersistentVolume, printPersistentVolumeClaim } from './volumes.ts';
import {
  printCronJob,
  printDaemonSet,
  printDeployment,
  printJob,
  printReplicaSet,
  printStatefulSet,
} from './workloads.ts';

type RowFn = (o: Obj, nowMs: number) => PrintedRow;

/** pkg/printers/internalversion ports: an empty list prints `"rows":[]`. */
const PRINTED: Record<string, RowFn> = {
  pods: printPod,
  nodes: printNode,
  namespaces: printNamespace,
  services: printService,
  configmaps: printConfigMap,
  secrets: printSecret,
  serviceaccounts: printServiceAccount,
  events: printEvent,
  'events.k8s.io/events': printEventsV1Event,
  'apps/deployments': printDeployment,
  'apps/replicasets': printReplicaSet,
  'apps/statefulsets': printStatefulSet,
  'apps/daemonsets': printDaemonSet,
  'batch/jobs': printJob,
  'batch/cronjobs': printCronJob,
  'discovery.k8s.io/endpointslices': printEndpointSlice,
  'coordination.k8s.io/leases': printLease,
  'rbac.authorization.k8s.io/rolebindings': printRoleBinding,
  'rbac.authorization.k8s.io/clusterrolebindings': printRoleBinding,
  'policy/poddisruptionbudgets': printPodDisruptionBudget,
  'networking.k8s.io/networkpolicies': printNetworkPolicy,
  'networking.k8s.io/ingresses': printIngress,
  'networking.k8s.io/ingressclasses': printIngressClass,
  persistentvolumes: printPersistentVolume,
  persistentvolumeclaims: printPersistentVolumeClaim,
  'autoscaling/horizontalpodautoscalers': printHorizontalPodAutoscaler,
  'storage.k8s.io/storageclasses': (o, nowMs) => printStorageClass(o, nowMs),
};

/** `printXList` functions that look at the whole list (not only loop over its items). */
const PAGES: Record<string, (items: readonly Obj[]) => PagePrinter> = {
  'storage.k8s.io/storageclasses': storageClassPage,
};

/** The default and CRD convertors: an empty list prints `"rows":null` (their nil slice). */
const CONVERTED: Record<string, RowFn> = {
  'rbac.authorization.k8s.io/roles': printDefault,
  'rbac.authorization.k8s.io/clusterroles': printDefault,
  limitranges: printDefault,
  'apiextensions.k8s.io/customresourcedefinitions': printCustomResourceDefinition,
};

/** `TablePrinter.internalAnnotations` per kind (`pkg/apis/apps/v1/conversion.go`, `pkg/apis/autoscaling`). */
const INTERNAL_ANNOTATIONS: Record<string, TablePrinter['internalAnnotations']> = {
  // Convert_v1_DaemonSet_To_apps_DaemonSet: moved when strconv.ParseInt succeeds.
  'apps/daemonsets': [
    { key: 'deprecated.daemonset.template.generation', moved: (v) => /^[+-]?\d+$/.test(v) },
  ],
  // Convert_v1_Deployment_To_apps_Deployment: moved when not empty.
  'apps/deployments': [{ key: 'deprecated.deployment.rollback.to', moved: (v) => v !== '' }],
  // Convert_v2_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler: dropped.
  'autoscaling/horizontalpodautoscalers': [
    'autoscaling.alpha.kubernetes.io/metrics',
    'autoscaling.alpha.kubernetes.io/behavior',
    'autoscaling.alpha.kubernetes.io/scale-down-tolerance',
    'autoscaling.alpha.kubernetes.io/scale-up-tolerance',
    'autoscaling.alpha.kubernetes.io/current-metrics',
    'autoscaling.alpha.kubernetes.io/conditions',
  ].map((key) => ({ key, moved: () => true })),
};

const cache = new Map<string, TablePrinter | undefined>();

/**
 * The Table printer of a built-in resource (`group` "" for core), or undefined when the cache
 * has no faithful port of the apiserver's.
 */
export function tablePrinter(group: string, resource: string): TablePrinter | undefined {
  const key = group === '' ? resource : `${group}/${resource}`;
  if (cache.has(key)) return cache.get(key);
  const columns = COLUMN_DEFINITIONS[key];
  const printed = PRINTED[key];
  const converted = CONVERTED[key];
  let p: TablePrinter | undefined;
  const internalAnnotations = INTERNAL_ANNOTATIONS[key];
  const page = PAGES[key];
  if (columns && printed)
    p = {
      columns,
      row: printed,
      emptyRows: '[]',
      ...(internalAnnotations ? { internalAnnotations } : {}),
      ...(page ? { page } : {}),
    };
  else if (columns && converted) p = { columns, row: converted, emptyRows: 'null' };
  cache.set(key, p);
  return p;
}

/** The `group/resource` keys the cache prints (docs, tests). */
export function printedResources(): string[] {
  return [...Object.keys(PRINTED), ...Object.keys(CONVERTED)];
}
