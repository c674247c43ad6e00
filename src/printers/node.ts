/**
 * The Node row: a port of `printNode`, `getNodeInternalIP`, `getNodeExternalIP` and
 * `findNodeRoles` (k8s.io/kubernetes v1.37.2 `pkg/printers/internalversion/printers.go`).
 */

import { goSorted, str } from './go-format.ts';
import { since } from './human-duration.ts';
import type { Obj, PrintedRow } from './table-types.ts';

const ROLE_PREFIX = 'node-role.kubernetes.io/';
const ROLE_LABEL = 'kubernetes.io/role';

/** `findNodeRoles`: `node-role.kubernetes.io/<role>` label keys and `kubernetes.io/role` values, sorted, unique. */
function nodeRoles(labels: Record<string, unknown>): string[] {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(labels)) {
    if (k.startsWith(ROLE_PREFIX)) {
      const role = k.slice(ROLE_PREFIX.length);
      if (role.length > 0) roles.add(role);
    } else if (k === ROLE_LABEL && str(v) !== '') roles.add(str(v));
  }
  return goSorted([...roles]);
}

function address(node: Obj, type: string): string {
  const a = ((node.status?.addresses ?? []) as Obj[]).find((x) => x.type === type);
  return a ? str(a.address) : '<none>';
}

/**
 * `printNode`: NAME, STATUS (`Ready`/`NotReady`/`Unknown` from the Ready condition, plus
 * `SchedulingDisabled`), ROLES, AGE, VERSION, and the wide INTERNAL-IP, EXTERNAL-IP, OS-IMAGE,
 * KERNEL-VERSION (with ` (arch)`), CONTAINER-RUNTIME.
 */
export function printNode(node: Obj, nowMs: number): PrintedRow {
  const conditions: Obj[] = node.status?.conditions ?? [];
  // conditionMap: the last condition of each type wins.
  let ready: Obj | undefined;
  for (const c of conditions) if (c.type === 'Ready') ready = c;
  const status: string[] = [];
  if (ready) status.push(ready.status === 'True' ? 'Ready' : 'NotReady');
  if (status.length === 0) status.push('Unknown');
  if (node.spec?.unschedulable) status.push('SchedulingDisabled');
  const roles = nodeRoles(node.metadata?.labels ?? {}).join(',') || '<none>';
  const info = node.status?.nodeInfo ?? {};
  const osImage = str(info.osImage) || '<unknown>';
  let kernel = str(info.kernelVersion) || '<unknown>';
  const runtime = str(info.containerRuntimeVersion) || '<unknown>';
  if (str(info.architecture) !== '') kernel += ` (${info.architecture})`;
  return {
    cells: [
      str(node.metadata?.name),
      status.join(','),
      roles,
      since(node.metadata?.creationTimestamp, nowMs),
      str(info.kubeletVersion),
      address(node, 'InternalIP'),
      address(node, 'ExternalIP'),
      osImage,
      kernel,
      runtime,
    ],
  };
}
