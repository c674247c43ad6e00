/**
 * The two Table convertors that are not pkg/printers ports: the apiserver's default one
 * (k8s.io/apiserver `pkg/registry/rest/table.go` `defaultTableConvertor`: roles, clusterroles,
 * limitranges) and the CustomResourceDefinition one (k8s.io/apiextensions-apiserver
 * `pkg/registry/customresourcedefinition/tableconvertor`), both at v0.37.2.
 */
import { goSorted, str } from './go-format.ts';
import type { Obj, PrintedRow } from './table-types.ts';

/** Go's zero `metav1.Time` as `Time.UTC().Format(time.RFC3339)` writes it. */
const ZERO_RFC3339 = '0001-01-01T00:00:00Z';

/**
 * `defaultTableConvertor`: NAME, CREATED AT (the creation timestamp, RFC 3339 in UTC — the
 * stored form already, seconds precision).
 */
export function printDefault(o: Obj): PrintedRow {
  return { cells: [str(o.metadata?.name), str(o.metadata?.creationTimestamp) || ZERO_RFC3339] };
}

/**
 * `crdConvertor`: NAME, SCOPE, VERSIONS (served ones, `(storage)` marked, sorted), CREATED AT,
 * and wide GROUP, KIND, SHORTNAMES, ESTABLISHED (a boolean cell).
 */
export function printCustomResourceDefinition(o: Obj): PrintedRow {
  const versions: string[] = [];
  for (const v of (o.spec?.versions ?? []) as Obj[])
    if (v.served) versions.push(v.storage ? `${str(v.name)}(storage)` : str(v.name));
  const established = ((o.status?.conditions ?? []) as Obj[]).some(
    (c) => c.type === 'Established' && c.status === 'True',
  );
  return {
    cells: [
      str(o.metadata?.name),
      str(o.spec?.scope),
      goSorted(versions).join(','),
      str(o.metadata?.creationTimestamp) || ZERO_RFC3339,
      str(o.spec?.group),
      str(o.spec?.names?.kind),
      ((o.spec?.names?.shortNames ?? []) as string[]).join(','),
      established,
    ],
  };
}
