/**
 * Ingress and IngressClass rows: ports of `printIngress` (with `formatHosts`,
 * `ingressLoadBalancerStatusStringer`, `formatPorts`) and `printIngressClass` (with
 * `networkingutil.HasDefaultAnnotation`), k8s.io/kubernetes v1.37.2
 * `pkg/printers/internalversion/printers.go`, `Wide` as the apiserver prints.
 */
import { str } from './go-format.ts';
import { since } from './human-duration.ts';
import { loadBalancer } from './service.ts';
import type { Obj, PrintedRow } from './table-types.ts';

/** `formatHosts`: the first 3 rule hosts (empty ones skipped), `+ N more...` (N counts all rules), `*` for none. */
function formatHosts(rules: Obj[]): string {
  const list: string[] = [];
  const max = 3;
  let more = false;
  for (const rule of rules) {
    if (list.length === max) more = true;
    if (!more && str(rule?.host) !== '') list.push(str(rule.host));
  }
  if (list.length === 0) return '*';
  const ret = list.join(',');
  return more ? `${ret} + ${rules.length - max} more...` : ret;
}

/** `printIngress`: NAME, CLASS (`<none>`), HOSTS, ADDRESS (wide: untruncated), PORTS (`80` or `80, 443` with TLS), AGE. */
export function printIngress(o: Obj, nowMs: number): PrintedRow {
  const className = o.spec?.ingressClassName;
  return {
    cells: [
      str(o.metadata?.name),
      className === undefined || className === null ? '<none>' : str(className),
      formatHosts((o.spec?.rules ?? []) as Obj[]),
      loadBalancer(o.status?.loadBalancer),
      (o.spec?.tls ?? []).length !== 0 ? '80, 443' : '80',
      since(o.metadata?.creationTimestamp, nowMs),
    ],
  };
}

/** `printIngressClass`: NAME (` (default)` when annotated so), CONTROLLER, PARAMETERS (`Kind[.group]/name` or `<none>`), AGE. */
export function printIngressClass(o: Obj, nowMs: number): PrintedRow {
  let name = str(o.metadata?.name);
  if (o.metadata?.annotations?.['ingressclass.kubernetes.io/is-default-class'] === 'true')
    name += ' (default)';
  const p = o.spec?.parameters;
  let parameters = '<none>';
  if (p !== undefined && p !== null) {
    parameters = str(p.kind);
    if (p.apiGroup !== undefined && p.apiGroup !== null) parameters = `${parameters}.${str(p.apiGroup)}`;
    parameters = `${parameters}/${str(p.name)}`;
  }
  return { cells: [name, str(o.spec?.controller), parameters, since(o.metadata?.creationTimestamp, nowMs)] };
}
