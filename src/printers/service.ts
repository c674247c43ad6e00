/**
 * The Service row: a port of `printService`, `getServiceExternalIP`,
 * `loadBalancerStatusStringer` and `makePortString` (k8s.io/kubernetes v1.37.2
 * `pkg/printers/internalversion/printers.go`). The apiserver prints with `Wide`, so the
 * load-balancer list is never cut to 16 characters.
 */

import { formatLabels, goSorted, int, str } from './go-format.ts';
import { since } from './human-duration.ts';
import type { Obj, PrintedRow } from './table-types.ts';

/** `loadBalancerStatusStringer(s, wide=true)`: ingress IPs (or hostnames), unique, sorted, comma-joined. */
export function loadBalancer(s: Obj): string {
  const result = new Set<string>();
  for (const i of (s?.ingress ?? []) as Obj[]) {
    if (str(i.ip) !== '') result.add(i.ip);
    else if (str(i.hostname) !== '') result.add(i.hostname);
  }
  return goSorted([...result]).join(',');
}

/** `getServiceExternalIP(svc, wide=true)`. */
function externalIP(svc: Obj): string {
  const spec = svc.spec ?? {};
  const ips: string[] = spec.externalIPs ?? [];
  switch (spec.type) {
    case 'ClusterIP':
    case 'NodePort':
      return ips.length > 0 ? ips.join(',') : '<none>';
    case 'LoadBalancer': {
      const lb = loadBalancer(svc.status?.loadBalancer);
      if (ips.length > 0) return [...(lb.length > 0 ? lb.split(',') : []), ...ips].join(',');
      return lb.length > 0 ? lb : '<pending>';
    }
    case 'ExternalName':
      return str(spec.externalName);
  }
  return '<unknown>';
}

/** `makePortString`: `port/protocol` or `port:nodePort/protocol`, comma-joined. */
function ports(ps: Obj[]): string {
  return ps
    .map((p) =>
      int(p.nodePort) > 0
        ? `${int(p.port)}:${int(p.nodePort)}/${str(p.protocol)}`
        : `${int(p.port)}/${str(p.protocol)}`,
    )
    .join(',');
}

/** `printService`: NAME, TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S), AGE, wide SELECTOR. */
export function printService(svc: Obj, nowMs: number): PrintedRow {
  const spec = svc.spec ?? {};
  const clusterIPs: string[] = spec.clusterIPs ?? [];
  const portString = ports(spec.ports ?? []) || '<none>';
  return {
    cells: [
      str(svc.metadata?.name),
      str(spec.type),
      clusterIPs.length > 0 ? clusterIPs[0]! : '<none>',
      externalIP(svc),
      portString,
      since(svc.metadata?.creationTimestamp, nowMs),
      formatLabels(spec.selector),
    ],
  };
}
