/**
 * PersistentVolume and PersistentVolumeClaim rows: ports of `printPersistentVolume` and
 * `printPersistentVolumeClaim` (k8s.io/kubernetes v1.37.2 `pkg/printers/internalversion/printers.go`,
 * with `pkg/apis/core/helper` `GetAccessModesAsString`, `GetPersistentVolumeClass`,
 * `GetPersistentVolumeClaimClass`), `Wide` as the apiserver prints.
 */
import { str } from './go-format.ts';
import { since } from './human-duration.ts';
import type { Obj, PrintedRow } from './table-types.ts';

/** `volume.beta.kubernetes.io/storage-class`, read before the spec's class. */
const BETA_CLASS = 'volume.beta.kubernetes.io/storage-class';

/** `GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order, each once, comma-joined. */
function accessModes(modes: unknown): string {
  const have = new Set((modes ?? []) as string[]);
  const out: string[] = [];
  for (const [mode, abbr] of [
    ['ReadWriteOnce', 'RWO'],
    ['ReadOnlyMany', 'ROX'],
    ['ReadWriteMany', 'RWX'],
    ['ReadWriteOncePod', 'RWOP'],
  ] as const)
    if (have.has(mode)) out.push(abbr);
  return out.join(',');
}

/** A `resource.Quantity` value's `String()`: its canonical form, as stored; `0` when absent. */
function quantity(q: unknown): string {
  return q === undefined || q === null ? '0' : str(q);
}

/** The beta class annotation when present (even empty), else `fallback`. */
function storageClass(o: Obj, fallback: unknown): string {
  const a = o.metadata?.annotations;
  if (a && Object.hasOwn(a, BETA_CLASS)) return str(a[BETA_CLASS]);
  return str(fallback);
}

/**
 * `printPersistentVolume`: NAME, CAPACITY, ACCESS MODES, RECLAIM POLICY, STATUS (`Terminating`
 * once deleting), CLAIM (`namespace/name`), STORAGECLASS, VOLUMEATTRIBUTESCLASS (`<unset>`),
 * REASON, AGE, wide VOLUMEMODE (`<unset>`).
 */
export function printPersistentVolume(o: Obj, nowMs: number): PrintedRow {
  const claim = o.spec?.claimRef;
  const vac = o.spec?.volumeAttributesClassName;
  const mode = o.spec?.volumeMode;
  return {
    cells: [
      str(o.metadata?.name),
      quantity(o.spec?.capacity?.storage),
      accessModes(o.spec?.accessModes),
      str(o.spec?.persistentVolumeReclaimPolicy),
      o.metadata?.deletionTimestamp ? 'Terminating' : str(o.status?.phase),
      claim ? `${str(claim.namespace)}/${str(claim.name)}` : '',
      storageClass(o, o.spec?.storageClassName),
      vac === undefined || vac === null ? '<unset>' : str(vac),
      str(o.status?.reason),
      since(o.metadata?.creationTimestamp, nowMs),
      mode === undefined || mode === null ? '<unset>' : str(mode),
    ],
  };
}

/**
 * `printPersistentVolumeClaim`: NAME, STATUS (`Terminating` once deleting), VOLUME, CAPACITY and
 * ACCESS MODES (the status's, once bound to a volume; else empty), STORAGECLASS,
 * VOLUMEATTRIBUTESCLASS (`<unset>`), AGE, wide VOLUMEMODE (`<unset>`).
 */
export function printPersistentVolumeClaim(o: Obj, nowMs: number): PrintedRow {
  const volumeName = str(o.spec?.volumeName);
  const bound = volumeName !== '';
  const vac = o.spec?.volumeAttributesClassName;
  const mode = o.spec?.volumeMode;
  return {
    cells: [
      str(o.metadata?.name),
      o.metadata?.deletionTimestamp ? 'Terminating' : str(o.status?.phase),
      volumeName,
      bound ? quantity(o.status?.capacity?.storage) : '',
      bound ? accessModes(o.status?.accessModes) : '',
      storageClass(o, o.spec?.storageClassName),
      vac === undefined || vac === null ? '<unset>' : str(vac),
      since(o.metadata?.creationTimestamp, nowMs),
      mode === undefined || mode === null ? '<unset>' : str(mode),
    ],
  };
}
