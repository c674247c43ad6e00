/**
 * HorizontalPodAutoscaler rows: a port of `printHorizontalPodAutoscaler` with
 * `formatHPAMetrics` (k8s.io/kubernetes v1.37.2 `pkg/printers/internalversion/printers.go`),
 * reading the autoscaling/v2 form the cache holds (the internal type's fields, same names).
 */
import { int, str } from './go-format.ts';
import { since } from './human-duration.ts';
import type { Obj, PrintedRow } from './table-types.ts';

/** `(*resource.Quantity).String()`: the canonical form as stored; `<nil>` for a nil pointer. */
function q(v: unknown): string {
  return v === undefined || v === null ? '<nil>' : str(v);
}

const set = (v: unknown): boolean => v !== undefined && v !== null;

/** One metric (`formatHPAMetrics`' switch): `current/target`, `(avg)` or `name: ` as Go writes them. */
function metric(spec: Obj, status: Obj | undefined): string {
  switch (spec?.type) {
    case 'External':
    case 'Object': {
      const field = spec.type === 'External' ? 'external' : 'object';
      const target = spec[field]?.target ?? {};
      const cur = status?.[field];
      if (set(target.averageValue)) {
        const current =
          set(cur) && set(cur.current?.averageValue) ? q(cur.current.averageValue) : '<unknown>';
        return `${current}/${q(target.averageValue)} (avg)`;
      }
      const current = set(cur) ? q(cur.current?.value) : '<unknown>';
      return `${current}/${q(target.value)}`;
    }
    case 'Pods': {
      const cur = status?.pods;
      const current = set(cur) ? q(cur.current?.averageValue) : '<unknown>';
      return `${current}/${q(spec.pods?.target?.averageValue)}`;
    }
    case 'Resource':
    case 'ContainerResource': {
      const field = spec.type === 'Resource' ? 'resource' : 'containerResource';
      const s = spec[field] ?? {};
      const target = s.target ?? {};
      const cur = status?.[field];
      if (set(target.averageValue)) {
        const current = set(cur) ? q(cur.current?.averageValue) : '<unknown>';
        return `${str(s.name)}: ${current}/${q(target.averageValue)}`;
      }
      const current =
        set(cur) && set(cur.current?.averageUtilization) ? `${cur.current.averageUtilization}%` : '<unknown>';
      const t = set(target.averageUtilization) ? `${target.averageUtilization}%` : '<auto>';
      return `${str(s.name)}: ${current}/${t}`;
    }
    default:
      return '<unknown type>';
  }
}

/** `formatHPAMetrics`: `<none>`, or the first 2 metrics joined by `, `, `+ N more...`. */
function formatMetrics(specs: Obj[], statuses: Obj[]): string {
  if (specs.length === 0) return '<none>';
  const list = specs.map((s, i) => metric(s, statuses[i]));
  const max = 2;
  if (list.length > max) return `${list.slice(0, max).join(', ')} + ${list.length - max} more...`;
  return list.join(', ');
}

/** `printHorizontalPodAutoscaler`: NAME, REFERENCE (`Kind/name`), TARGETS, MINPODS (`<unset>`), MAXPODS, REPLICAS, AGE. */
export function printHorizontalPodAutoscaler(o: Obj, nowMs: number): PrintedRow {
  const ref = o.spec?.scaleTargetRef;
  const min = o.spec?.minReplicas;
  return {
    cells: [
      str(o.metadata?.name),
      `${str(ref?.kind)}/${str(ref?.name)}`,
      formatMetrics((o.spec?.metrics ?? []) as Obj[], (o.status?.currentMetrics ?? []) as Obj[]),
      set(min) ? String(min) : '<unset>',
      int(o.spec?.maxReplicas),
      int(o.status?.currentReplicas),
      since(o.metadata?.creationTimestamp, nowMs),
    ],
  };
}
