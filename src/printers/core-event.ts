/**
 * The Event rows (core/v1 and events.k8s.io/v1): a port of `printEvent` and `formatEventSource` (k8s.io/kubernetes
 * v1.37.2 `pkg/printers/internalversion/printers.go`), printed `Wide` as the apiserver does.
 */

import { int, str } from './go-format.ts';
import { since, timeMs } from './human-duration.ts';
import type { Obj, PrintedRow } from './table-types.ts';

/** `formatEventSource`: component (or reportingController), `, host` (or reportingInstance) when set. */
function source(e: Obj): string {
  const component = str(e.source?.component) || str(e.reportingComponent);
  const instance = str(e.source?.host) || str(e.reportingInstance);
  return instance.length === 0 ? component : `${component}, ${instance}`;
}

/**
 * `printEvent` (Wide): LAST SEEN, TYPE, REASON, OBJECT (`kind/name`, kind lower-cased),
 * SUBOBJECT, SOURCE, MESSAGE (trimmed), FIRST SEEN, COUNT, NAME.
 */
export function printEvent(e: Obj, nowMs: number): PrintedRow {
  let first = since(e.firstTimestamp, nowMs);
  if (timeMs(e.firstTimestamp) === undefined) first = since(e.eventTime, nowMs);
  let last = since(e.lastTimestamp, nowMs);
  if (timeMs(e.lastTimestamp) === undefined) last = first;
  let count = int(e.count);
  if (e.series !== undefined && e.series !== null) {
    last = since(e.series.lastObservedTime, nowMs);
    count = int(e.series.count);
  } else if (count === 0) count = 1;
  const kind = str(e.involvedObject?.kind).toLowerCase();
  const name = str(e.involvedObject?.name);
  return {
    cells: [
      last,
      str(e.type),
      str(e.reason),
      name.length > 0 ? `${kind}/${name}` : kind,
      str(e.involvedObject?.fieldPath),
      source(e),
      goTrimSpace(str(e.message)),
      first,
      count,
      str(e.metadata?.name),
    ],
  };
}

/** Go `unicode.IsSpace` (JS `\s` also has U+FEFF and lacks U+0085). */
const GO_SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const TRIM = new RegExp(`^${GO_SPACE}+|${GO_SPACE}+$`, 'g');

/** Go `strings.TrimSpace`. */
export function goTrimSpace(s: string): string {
  return s.replace(TRIM, '');
}

/**
 * An events.k8s.io/v1 Event as the core Event `printEvent` reads: the apiserver serves
 * events.k8s.io from the core events' storage and prints the internal `core.Event`, which
 * k8s.io/kubernetes `pkg/apis/events/v1/conversion.go` `Convert_v1_Event_To_core_Event` fills
 * from the v1 fields: `regarding` → `involvedObject`, `deprecatedSource` → `source`, `note` →
 * `message`, `deprecated{First,Last}Timestamp` → `{first,last}Timestamp`, `deprecatedCount` →
 * `count`, `reportingController` → `reportingComponent` (the JSON name of the internal
 * `ReportingController`); the rest keeps its name.
 */
function asCoreEvent(e: Obj): Obj {
  return {
    metadata: e.metadata,
    involvedObject: e.regarding,
    reason: e.reason,
    message: e.note,
    source: e.deprecatedSource,
    firstTimestamp: e.deprecatedFirstTimestamp,
    lastTimestamp: e.deprecatedLastTimestamp,
    count: e.deprecatedCount,
    type: e.type,
    eventTime: e.eventTime,
    series: e.series,
    reportingComponent: e.reportingController,
    reportingInstance: e.reportingInstance,
  };
}

/** The events.k8s.io/v1 Event row: `printEvent` of the converted event ({@link asCoreEvent}). */
export function printEventsV1Event(e: Obj, nowMs: number): PrintedRow {
  return printEvent(asCoreEvent(e ?? {}), nowMs);
}
