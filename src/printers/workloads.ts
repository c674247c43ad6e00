/**
 * The rows of the workload controllers: ports of `printDeployment`, `printReplicaSet`,
 * `printStatefulSet`, `printDaemonSet`, `printJob` and `printCronJob` (k8s.io/kubernetes v1.37.2
 * `pkg/printers/internalversion/printers.go`), `Wide` as the apiserver prints.
 */

import {
  boolPtr,
  containerCells,
  formatLabelSelector,
  formatLabels,
  int,
  labelSelectorString,
  str,
} from './go-format.ts';
import { humanDuration, since, timeMs } from './human-duration.ts';
import type { Obj, PrintedRow } from './table-types.ts';

const name = (o: Obj) => str(o.metadata?.name);
const age = (o: Obj, nowMs: number) => since(o.metadata?.creationTimestamp, nowMs);

/** `printDeployment`: NAME, READY, UP-TO-DATE, AVAILABLE, AGE, wide CONTAINERS, IMAGES, SELECTOR. */
export function printDeployment(o: Obj, nowMs: number): PrintedRow {
  const sel = labelSelectorString(o.spec?.selector);
  return {
    cells: [
      name(o),
      `${int(o.status?.readyReplicas)}/${int(o.spec?.replicas)}`,
      int(o.status?.updatedReplicas),
      int(o.status?.availableReplicas),
      age(o, nowMs),
      ...containerCells(o.spec?.template?.spec?.containers),
      sel === undefined ? '<invalid>' : sel,
    ],
  };
}

/** `printReplicaSet`: NAME, DESIRED, CURRENT, READY, AGE, wide CONTAINERS, IMAGES, SELECTOR. */
export function printReplicaSet(o: Obj, nowMs: number): PrintedRow {
  return {
    cells: [
      name(o),
      int(o.spec?.replicas),
      int(o.status?.replicas),
      int(o.status?.readyReplicas),
      age(o, nowMs),
      ...containerCells(o.spec?.template?.spec?.containers),
      formatLabelSelector(o.spec?.selector),
    ],
  };
}

/** `printStatefulSet`: NAME, READY, AGE, wide CONTAINERS, IMAGES. */
export function printStatefulSet(o: Obj, nowMs: number): PrintedRow {
  return {
    cells: [
      name(o),
      `${int(o.status?.readyReplicas)}/${int(o.spec?.replicas)}`,
      age(o, nowMs),
      ...containerCells(o.spec?.template?.spec?.containers),
    ],
  };
}

/**
 * `printDaemonSet`: NAME, DESIRED, CURRENT, READY, UP-TO-DATE, AVAILABLE, NODE SELECTOR, AGE,
 * wide CONTAINERS, IMAGES, SELECTOR.
 */
export function printDaemonSet(o: Obj, nowMs: number): PrintedRow {
  const s = o.status ?? {};
  return {
    cells: [
      name(o),
      int(s.desiredNumberScheduled),
      int(s.currentNumberScheduled),
      int(s.numberReady),
      int(s.updatedNumberScheduled),
      int(s.numberAvailable),
      formatLabels(o.spec?.template?.spec?.nodeSelector),
      age(o, nowMs),
      ...containerCells(o.spec?.template?.spec?.containers),
      formatLabelSelector(o.spec?.selector),
    ],
  };
}

/** `hasJobCondition`: the first condition of the type decides. */
function jobCondition(conditions: Obj[], type: string): boolean {
  const c = conditions.find((x) => x.type === type);
  return c !== undefined && c.status === 'True';
}

/**
 * `printJob`: NAME, STATUS (Complete, Failed, Terminating, Suspended, FailureTarget,
 * SuccessCriteriaMet, Running), COMPLETIONS, DURATION, AGE, wide CONTAINERS, IMAGES, SELECTOR.
 */
export function printJob(o: Obj, nowMs: number): PrintedRow {
  const spec = o.spec ?? {};
  const st = o.status ?? {};
  const succeeded = int(st.succeeded);
  let completions: string;
  if (spec.completions !== undefined && spec.completions !== null)
    completions = `${succeeded}/${int(spec.completions)}`;
  else {
    const parallelism = int(spec.parallelism);
    completions = parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
  }
  let duration = '';
  const start = timeMs(st.startTime);
  const done = timeMs(st.completionTime);
  // A present startTime of Go's zero time is still non-nil: only absence prints "".
  if (st.startTime !== undefined && st.startTime !== null) {
    const from = start ?? ZERO_MS;
    if (st.completionTime === undefined || st.completionTime === null)
      duration = humanDuration((nowMs - from) * 1e6);
    else duration = humanDuration(((done ?? ZERO_MS) - from) * 1e6);
  }
  const cs: Obj[] = st.conditions ?? [];
  let status: string;
  if (jobCondition(cs, 'Complete')) status = 'Complete';
  else if (jobCondition(cs, 'Failed')) status = 'Failed';
  else if (o.metadata?.deletionTimestamp !== undefined && o.metadata?.deletionTimestamp !== null)
    status = 'Terminating';
  else if (jobCondition(cs, 'Suspended')) status = 'Suspended';
  else if (jobCondition(cs, 'FailureTarget')) status = 'FailureTarget';
  else if (jobCondition(cs, 'SuccessCriteriaMet')) status = 'SuccessCriteriaMet';
  else status = 'Running';
  return {
    cells: [
      name(o),
      status,
      completions,
      duration,
      age(o, nowMs),
      ...containerCells(spec.template?.spec?.containers),
      formatLabelSelector(spec.selector),
    ],
  };
}

const ZERO_MS = Date.parse('0001-01-01T00:00:00Z');

/**
 * `printCronJob`: NAME, SCHEDULE, TIMEZONE, SUSPEND, ACTIVE, LAST SCHEDULE, AGE, wide
 * CONTAINERS, IMAGES, SELECTOR.
 */
export function printCronJob(o: Obj, nowMs: number): PrintedRow {
  const spec = o.spec ?? {};
  const last =
    o.status?.lastScheduleTime !== undefined && o.status?.lastScheduleTime !== null
      ? since(o.status.lastScheduleTime, nowMs)
      : '<none>';
  const tz = spec.timeZone !== undefined && spec.timeZone !== null ? str(spec.timeZone) : '<none>';
  const tpl = spec.jobTemplate?.spec ?? {};
  return {
    cells: [
      name(o),
      str(spec.schedule),
      tz,
      boolPtr(spec.suspend),
      (o.status?.active ?? []).length,
      last,
      age(o, nowMs),
      ...containerCells(tpl.template?.spec?.containers),
      formatLabelSelector(tpl.selector),
    ],
  };
}
