/**
 * The small Go helpers the printers call, ported: `labels.FormatLabels`
 * (k8s.io/apimachinery `pkg/labels/labels.go`), `metav1.FormatLabelSelector` and the selector's
 * `String` (`pkg/apis/meta/v1/helpers.go` `LabelSelectorAsSelector`, `pkg/labels/selector.go`
 * `Requirement.String`), printers.go's `layoutContainerCells`, `listWithMoreString`,
 * `printBool(Ptr)`, and Go's byte-wise string order (`sort.Strings`).
 */
import { isValidLabelKey, isValidLabelValue } from '../apimachinery/label-validation.ts';
import type { Obj } from './table-types.ts';

/** Go's `a < b` on strings: UTF-8 byte order (JS `<` compares UTF-16 code units). */
export function goLess(a: string, b: string): boolean {
  return Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0;
}

/** Go `sort.Strings` (a copy). */
export function goSorted(xs: readonly string[]): string[] {
  return [...xs].sort((a, b) => (goLess(a, b) ? -1 : goLess(b, a) ? 1 : 0));
}

/** `labels.FormatLabels`: `k=v` pairs sorted, comma-joined; `<none>` when empty or absent. */
export function formatLabels(m: Record<string, string> | undefined | null): string {
  const s = goSorted(Object.entries(m ?? {}).map(([k, v]) => `${k}=${str(v)}`)).join(',');
  return s === '' ? '<none>' : s;
}

const OPERATORS: Record<string, string> = { In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!' };

/**
 * `labels.NewRequirement`'s checks: a qualified-name key, valid label values, at least one value
 * for `in`/`notin`, exactly one for `=`, none for `exists`/`!`.
 */
function validRequirement(key: string, op: string, values: readonly string[]): boolean {
  if (!isValidLabelKey(key)) return false;
  if ((op === 'in' || op === 'notin') && values.length === 0) return false;
  if (op === '=' && values.length !== 1) return false;
  if ((op === 'exists' || op === '!') && values.length !== 0) return false;
  return values.every(isValidLabelValue);
}

/**
 * `metav1.LabelSelectorAsSelector(sel).String()`: requirements sorted by key (matchLabels as
 * `k=v`, matchExpressions as `k in (a,b)`, `k notin (…)`, `k`, `!k`; values sorted);
 * `""` for a nil or empty selector; undefined for an operator it rejects or a requirement
 * `labels.NewRequirement` refuses (callers print `<error>` or `<invalid>`, as theirs do).
 */
export function labelSelectorString(sel: Obj): string | undefined {
  if (sel === undefined || sel === null) return '';
  const reqs: { key: string; text: string }[] = [];
  for (const [k, v] of Object.entries((sel.matchLabels ?? {}) as Record<string, unknown>)) {
    if (!validRequirement(k, '=', [str(v)])) return undefined;
    reqs.push({ key: k, text: `${k}=${str(v)}` });
  }
  for (const e of (sel.matchExpressions ?? []) as Obj[]) {
    const op = OPERATORS[str(e.operator)];
    if (op === undefined) return undefined;
    const key = str(e.key);
    const values = ((e.values ?? []) as unknown[]).map(str);
    if (!validRequirement(key, op, values)) return undefined;
    const vs = values.length === 1 ? values[0]! : goSorted(values).join(',');
    const text = op === 'exists' ? key : op === '!' ? `!${key}` : `${key} ${op} (${vs})`;
    reqs.push({ key, text });
  }
  // sort.Sort(ByKey): by key only (stable here; Go's is not, for equal keys).
  reqs.sort((a, b) => (goLess(a.key, b.key) ? -1 : goLess(b.key, a.key) ? 1 : 0));
  return reqs.map((r) => r.text).join(',');
}

/** `metav1.FormatLabelSelector`: {@link labelSelectorString}, `<none>` when empty, `<error>` when invalid. */
export function formatLabelSelector(sel: Obj): string {
  const s = labelSelectorString(sel);
  if (s === undefined) return '<error>';
  return s === '' ? '<none>' : s;
}

/** printers.go `layoutContainerCells`: container names and images, each comma-joined. */
export function containerCells(containers: Obj): [string, string] {
  const cs = (containers ?? []) as Obj[];
  return [cs.map((c) => str(c.name)).join(','), cs.map((c) => str(c.image)).join(',')];
}

/** printers.go `listWithMoreString`: `a,b,c + N more...`, or `<unset>` when empty. */
export function listWithMore(list: string[], more: boolean, count: number, max: number): string {
  const ret = list.join(',');
  if (more) return `${ret} + ${count - max} more...`;
  return ret === '' ? '<unset>' : ret;
}

/** printers.go `printBoolPtr`: `True`, `False`, or `<unset>` when absent. */
export function boolPtr(v: unknown): string {
  if (v === undefined || v === null) return '<unset>';
  return v ? 'True' : 'False';
}

/** A Go `int` field as JSON gives it (absent = 0). */
export function int(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

/** A Go `string` field (absent = ""). */
export function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
