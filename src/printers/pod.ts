/**
 * The Pod row: a port of `printPod` (k8s.io/kubernetes v1.37.2
 * `pkg/printers/internalversion/printers.go`), with `podutil.IsRestartableInitContainer`,
 * `isPodInitializedConditionTrue`, `hasPodReadyCondition` and `IsPodPhaseTerminal`.
 */

import { int, str } from './go-format.ts';
import { since, timeMs } from './human-duration.ts';
import type { Obj, PrintedRow, RowCondition } from './table-types.ts';

const SUCCEEDED: readonly RowCondition[] = [
  { type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' },
];
const FAILED: readonly RowCondition[] = [
  { type: 'Completed', status: 'True', reason: 'Failed', message: 'The pod failed.' },
];

/** `podutil.IsRestartableInitContainer`: an init container with `restartPolicy: Always` (a sidecar). */
function restartable(c: Obj): boolean {
  return c?.restartPolicy === 'Always';
}

function hasCondition(conditions: Obj[], type: string): boolean {
  return conditions.some((c) => c.type === type && c.status === 'True');
}

/** `isPodInitializedConditionTrue`: the first `Initialized` condition decides. */
function initialized(conditions: Obj[]): boolean {
  const c = conditions.find((x) => x.type === 'Initialized');
  return c !== undefined && c.status === 'True';
}

/** The later of a running maximum and a container's last termination time (`metav1.Time.Before`, seconds). */
function later(max: number | undefined, cs: Obj): number | undefined {
  const t = timeMs(cs?.lastState?.terminated?.finishedAt);
  // A zero finishedAt is never after anything; a zero max is before every set time.
  if (t === undefined) return max;
  return max === undefined || max < t ? t : max;
}

/**
 * `printPod`: NAME, READY (`ready/total`, sidecars counted), STATUS (the phase, the pod's
 * reason, an init or container state's reason, `Terminating`, …), RESTARTS (`N (AGE ago)` after a
 * restart), AGE, and the wide IP, NODE, NOMINATED NODE, READINESS GATES; a `Completed` row
 * condition for a Succeeded or Failed pod.
 */
export function printPod(pod: Obj, nowMs: number): PrintedRow {
  const spec = pod.spec ?? {};
  const status = pod.status ?? {};
  const conditions: Obj[] = status.conditions ?? [];
  const containers: Obj[] = spec.containers ?? [];
  const initContainers: Obj[] = spec.initContainers ?? [];
  let restarts = 0;
  let restartableRestarts = 0;
  let totalContainers = containers.length;
  let readyContainers = 0;
  let lastRestart: number | undefined;
  let lastRestartableRestart: number | undefined;
  const phase = str(status.phase);
  let reason = status.reason ? str(status.reason) : phase;
  for (const c of conditions)
    if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';
  const row: PrintedRow = { cells: [] };
  if (phase === 'Succeeded') row.conditions = SUCCEEDED;
  else if (phase === 'Failed') row.conditions = FAILED;

  const inits = new Map<string, Obj>();
  for (const c of initContainers) {
    inits.set(c.name, c);
    if (restartable(c)) totalContainers++;
  }
  let initializing = false;
  const initStatuses: Obj[] = status.initContainerStatuses ?? [];
  for (let i = 0; i < initStatuses.length; i++) {
    const cs = initStatuses[i];
    restarts += int(cs.restartCount);
    lastRestart = later(lastRestart, cs);
    const sidecar = restartable(inits.get(cs.name));
    if (sidecar) {
      restartableRestarts += int(cs.restartCount);
      lastRestartableRestart = later(lastRestartableRestart, cs);
    }
    const terminated = cs.state?.terminated;
    const waiting = cs.state?.waiting;
    if (terminated && int(terminated.exitCode) === 0) continue;
    if (sidecar && cs.started === true) {
      if (cs.ready) readyContainers++;
      continue;
    }
    if (terminated) {
      if (!terminated.reason) {
        reason =
          int(terminated.signal) !== 0
            ? `Init:Signal:${int(terminated.signal)}`
            : `Init:ExitCode:${int(terminated.exitCode)}`;
      } else reason = `Init:${terminated.reason}`;
    } else if (waiting?.reason && waiting.reason !== 'PodInitializing') {
      reason = `Init:${waiting.reason}`;
    } else {
      reason = `Init:${i}/${initContainers.length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || initialized(conditions)) {
    restarts = restartableRestarts;
    lastRestart = lastRestartableRestart;
    let hasRunning = false;
    let errorReason = '';
    const statuses: Obj[] = status.containerStatuses ?? [];
    for (let i = statuses.length - 1; i >= 0; i--) {
      const cs = statuses[i];
      restarts += int(cs.restartCount);
      lastRestart = later(lastRestart, cs);
      const waiting = cs.state?.waiting;
      const terminated = cs.state?.terminated;
      if (waiting?.reason) reason = waiting.reason;
      else if (terminated) {
        if (terminated.reason) reason = terminated.reason;
        else if (int(terminated.signal) !== 0) reason = `Signal:${int(terminated.signal)}`;
        else reason = `ExitCode:${int(terminated.exitCode)}`;
        if (int(terminated.exitCode) !== 0) errorReason = reason;
      } else if (cs.ready && cs.state?.running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    if (reason === 'Completed') {
      if (hasRunning && hasCondition(conditions, 'Ready')) reason = 'Running';
      else if (errorReason !== '') reason = errorReason;
      else if (hasRunning) reason = 'NotReady';
    }
  }

  const deleting = pod.metadata?.deletionTimestamp !== undefined && pod.metadata?.deletionTimestamp !== null;
  if (deleting && status.reason === 'NodeLost') reason = 'Unknown';
  else if (deleting && phase !== 'Succeeded' && phase !== 'Failed') reason = 'Terminating';

  let restartsStr = String(restarts);
  if (restarts !== 0 && lastRestart !== undefined)
    restartsStr = `${restarts} (${since(new Date(lastRestart).toISOString(), nowMs)} ago)`;

  let podIP = str(status.podIPs?.[0]?.ip);
  if (podIP === '') podIP = '<none>';
  const nodeName = str(spec.nodeName) || '<none>';
  const nominated = str(status.nominatedNodeName) || '<none>';
  let gates = '<none>';
  const readinessGates: Obj[] = spec.readinessGates ?? [];
  if (readinessGates.length > 0) {
    let trueConditions = 0;
    for (const g of readinessGates) {
      const c = conditions.find((x) => x.type === g.conditionType);
      if (c?.status === 'True') trueConditions++;
    }
    gates = `${trueConditions}/${readinessGates.length}`;
  }
  row.cells = [
    str(pod.metadata?.name),
    `${readyContainers}/${totalContainers}`,
    reason,
    restartsStr,
    since(pod.metadata?.creationTimestamp, nowMs),
    podIP,
    nodeName,
    nominated,
    gates,
  ];
  return row;
}
