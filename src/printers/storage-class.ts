/**
 * The StorageClass rows: a port of `printStorageClass`, `printStorageClassInternal`,
 * `printStorageClassList` and `getEffectiveDefaultStorageClass` (k8s.io/kubernetes v1.37.2
 * `pkg/printers/internalversion/printers.go`, with `pkg/apis/storage/util` `IsDefaultAnnotation`).
 * The apiserver marks ` (default)` only when it prints a LIST, on the one class of that list (of
 * the page, when paged) it takes as the effective default; a GET or a watch event prints one
 * object with no effective default, so never marks it.
 */
import { goLess, str } from './go-format.ts';
import { since, timeMs } from './human-duration.ts';
import type { Obj, PagePrinter, PrintedRow } from './table-types.ts';

const DEFAULT = 'storageclass.kubernetes.io/is-default-class';
const BETA_DEFAULT = 'storageclass.beta.kubernetes.io/is-default-class';
const ZERO_MS = Date.parse('0001-01-01T00:00:00Z');

/** `IsDefaultAnnotation`: either annotation exactly `"true"`. */
function isDefault(o: Obj): boolean {
  const a = o?.metadata?.annotations;
  return a?.[DEFAULT] === 'true' || a?.[BETA_DEFAULT] === 'true';
}

/**
 * `printStorageClassInternal`: NAME (` (default)` when it is `effectiveDefault`), PROVISIONER,
 * RECLAIMPOLICY (`Delete` when unset), VOLUMEBINDINGMODE (`Immediate` when unset),
 * ALLOWVOLUMEEXPANSION (a boolean cell, false when unset), AGE. `printStorageClass` is this
 * with no effective default (a GET, a watch event).
 */
export function printStorageClass(o: Obj, nowMs: number, effectiveDefault = ''): PrintedRow {
  const name = str(o.metadata?.name);
  const reclaim = o.reclaimPolicy;
  const binding = o.volumeBindingMode;
  const expansion = o.allowVolumeExpansion;
  return {
    cells: [
      effectiveDefault !== '' && name === effectiveDefault ? `${name} (default)` : name,
      str(o.provisioner),
      reclaim === undefined || reclaim === null ? 'Delete' : str(reclaim),
      binding === undefined || binding === null ? 'Immediate' : str(binding),
      expansion === undefined || expansion === null ? false : expansion === true,
      since(o.metadata?.creationTimestamp, nowMs),
    ],
  };
}

/**
 * `getEffectiveDefaultStorageClass`: the name of the most recently created class annotated
 * default (equal creation times: the lowest name, Go's byte order), `""` when none is.
 */
export function effectiveDefaultStorageClass(items: readonly Obj[]): string {
  let best: Obj | undefined;
  let bestMs = 0;
  for (const o of items) {
    if (!isDefault(o)) continue;
    const ms = timeMs(o?.metadata?.creationTimestamp) ?? ZERO_MS;
    if (
      best === undefined ||
      ms > bestMs ||
      (ms === bestMs && goLess(str(o.metadata?.name), str(best.metadata?.name)))
    ) {
      best = o;
      bestMs = ms;
    }
  }
  return best === undefined ? '' : str(best.metadata?.name);
}

/** `printStorageClassList`: every row of one list (page) printed against its effective default. */
export function storageClassPage(items: readonly Obj[]): PagePrinter {
  const effective = effectiveDefaultStorageClass(items);
  return { key: effective, row: (o, nowMs) => printStorageClass(o, nowMs, effective) };
}
