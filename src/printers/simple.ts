/**
 * The rows of the kinds printed as their name, a field or two and their age: ports of
 * `printNamespace`, `printConfigMap`, `printSecret`, `printServiceAccount`, `printLease`,
 * `printEndpointSlice` (with `formatDiscoveryPorts`, `formatDiscoveryEndpoints`),
 * `printRoleBinding`, `printClusterRoleBinding` (with `rbac.SubjectsStrings`),
 * `printPodDisruptionBudget` and `printNetworkPolicy` (k8s.io/kubernetes v1.37.2
 * `pkg/printers/internalversion/printers.go`), `Wide` as the apiserver prints.
 */

import { formatLabelSelector, int, listWithMore, str } from './go-format.ts';
import { since } from './human-duration.ts';
import type { Obj, PrintedRow } from './table-types.ts';

const name = (o: Obj) => str(o.metadata?.name);
const age = (o: Obj, nowMs: number) => since(o.metadata?.creationTimestamp, nowMs);
const size = (m: unknown) => (m && typeof m === 'object' ? Object.keys(m).length : 0);

/** `printNamespace`: NAME, STATUS (phase), AGE. */
export function printNamespace(o: Obj, nowMs: number): PrintedRow {
  return { cells: [name(o), str(o.status?.phase), age(o, nowMs)] };
}

/** `printConfigMap`: NAME, DATA (keys of data and binaryData), AGE. */
export function printConfigMap(o: Obj, nowMs: number): PrintedRow {
  return { cells: [name(o), size(o.data) + size(o.binaryData), age(o, nowMs)] };
}

/** `printSecret`: NAME, TYPE, DATA (keys), AGE. */
export function printSecret(o: Obj, nowMs: number): PrintedRow {
  return { cells: [name(o), str(o.type), size(o.data), age(o, nowMs)] };
}

/** `printServiceAccount`: NAME, AGE. */
export function printServiceAccount(o: Obj, nowMs: number): PrintedRow {
  return { cells: [name(o), age(o, nowMs)] };
}

/** `printLease`: NAME, HOLDER, AGE. */
export function printLease(o: Obj, nowMs: number): PrintedRow {
  return { cells: [name(o), str(o.spec?.holderIdentity), age(o, nowMs)] };
}

/** `formatDiscoveryPorts`: the first 3 ports (number, else name, else `*`), `+ N more...`. */
function discoveryPorts(ports: Obj[]): string {
  const list: string[] = [];
  let more = false;
  for (const p of ports) {
    if (list.length < 3) {
      list.push(
        p.port !== undefined && p.port !== null ? String(p.port) : p.name != null ? str(p.name) : '*',
      );
    } else if (list.length === 3) more = true;
  }
  return listWithMore(list, more, ports.length, 3);
}

/** `formatDiscoveryEndpoints`: the first 3 addresses of all endpoints, `+ N more...`. */
function discoveryEndpoints(endpoints: Obj[]): string {
  const list: string[] = [];
  let more = false;
  let count = 0;
  for (const e of endpoints) {
    for (const a of (e.addresses ?? []) as string[]) {
      if (list.length < 3) list.push(a);
      else if (list.length === 3) more = true;
      count++;
    }
  }
  return listWithMore(list, more, count, 3);
}

/** `printEndpointSlice`: NAME, ADDRESSTYPE, PORTS, ENDPOINTS, AGE. */
export function printEndpointSlice(o: Obj, nowMs: number): PrintedRow {
  return {
    cells: [
      name(o),
      str(o.addressType),
      discoveryPorts(o.ports ?? []),
      discoveryEndpoints(o.endpoints ?? []),
      age(o, nowMs),
    ],
  };
}

/**
 * `printRoleBinding` / `printClusterRoleBinding`: NAME, ROLE (`Kind/name`), AGE, wide USERS,
 * GROUPS, SERVICEACCOUNTS (`namespace/name`), each joined by `, `.
 */
export function printRoleBinding(o: Obj, nowMs: number): PrintedRow {
  const users: string[] = [];
  const groups: string[] = [];
  const sas: string[] = [];
  for (const s of (o.subjects ?? []) as Obj[]) {
    if (s.kind === 'ServiceAccount') sas.push(`${str(s.namespace)}/${str(s.name)}`);
    else if (s.kind === 'User') users.push(str(s.name));
    else if (s.kind === 'Group') groups.push(str(s.name));
  }
  return {
    cells: [
      name(o),
      `${str(o.roleRef?.kind)}/${str(o.roleRef?.name)}`,
      age(o, nowMs),
      users.join(', '),
      groups.join(', '),
      sas.join(', '),
    ],
  };
}

/** `intstr.IntOrString.String()`: an int in decimal, a string as is. */
function intOrString(v: unknown): string {
  return typeof v === 'number' ? String(v) : str(v);
}

/** `printPodDisruptionBudget`: NAME, MIN AVAILABLE, MAX UNAVAILABLE (`N/A` when unset), ALLOWED DISRUPTIONS, AGE. */
export function printPodDisruptionBudget(o: Obj, nowMs: number): PrintedRow {
  const min = o.spec?.minAvailable;
  const max = o.spec?.maxUnavailable;
  return {
    cells: [
      name(o),
      min === undefined || min === null ? 'N/A' : intOrString(min),
      max === undefined || max === null ? 'N/A' : intOrString(max),
      int(o.status?.disruptionsAllowed),
      age(o, nowMs),
    ],
  };
}

/** `printNetworkPolicy`: NAME, POD-SELECTOR, AGE. */
export function printNetworkPolicy(o: Obj, nowMs: number): PrintedRow {
  return { cells: [name(o), formatLabelSelector(o.spec?.podSelector ?? {}), age(o, nowMs)] };
}
