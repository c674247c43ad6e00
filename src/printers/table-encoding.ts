/**
 * A `meta.k8s.io` Table as the apiserver's JSON serializer writes it (apimachinery
 * `pkg/apis/meta/v1` `Table` field order: kind, apiVersion, metadata, columnDefinitions, rows;
 * a row: cells, conditions when set, object), built from the cache's stored bytes: the apiserver's
 * `endpoints/handlers/response.go` `asTable` (k8s.io/apiserver v0.37.2) with the row's object per
 * `includeObject` — `Metadata` (the default) a PartialObjectMetadata whose `metadata` is cut out
 * of the stored bytes, never re-encoded; `Object` the object itself with its kind and apiVersion;
 * `None` `null`. The initial-events-end bookmark's row always carries its metadata
 * (`HasInitialEventsEndBookmarkAnnotation`).
 */
import { goJSON } from '../apimachinery/go-json.ts';
import { topLevelValueSpan } from '../apimachinery/json-span.ts';
import type { Cell, ColumnDefinition, Obj, PrintedRow, TablePrinter } from './table-types.ts';

/** `metav1.IncludeObjectPolicy`. */
export type IncludeObject = 'None' | 'Metadata' | 'Object';
/** The meta.k8s.io versions that serve Table (both, checked on v1.37.2). */
export type TableVersion = 'v1' | 'v1beta1';

/**
 * `includeObject` as `ValidateTableOptions` takes it: absent or empty = Metadata; undefined for
 * any other value (the apiserver's 400 "Unable to convert to Table as requested").
 */
export function parseIncludeObject(v: string | null): IncludeObject | undefined {
  if (v === null || v === '' || v === 'Metadata') return 'Metadata';
  if (v === 'None' || v === 'Object') return v;
  return undefined;
}

/** The Table's `ListMeta` (a GET's or a watch event's: the object's resourceVersion only). */
export interface TableMeta {
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

const columnsJson = new WeakMap<readonly ColumnDefinition[], Buffer>();

function columns(defs: readonly ColumnDefinition[]): Buffer {
  let b = columnsJson.get(defs);
  if (!b) {
    b = Buffer.from(
      goJSON(
        defs.map((d) => ({
          name: d.name,
          type: d.type,
          format: d.format,
          description: d.description,
          priority: d.priority,
        })),
      ),
    );
    columnsJson.set(defs, b);
  }
  return b;
}

/**
 * `{"kind":"Table","apiVersion":"meta.k8s.io/<v>","metadata":{…},"columnDefinitions":…,"rows":`
 * — `columnDefinitions` `null` when `headers` is false (a watch's events after its first).
 */
export function tableHead(
  version: TableVersion,
  meta: TableMeta,
  printer: TablePrinter,
  headers: boolean,
): Buffer {
  const cont = meta.continue ? `,"continue":${goJSON(meta.continue)}` : '';
  const remaining =
    meta.remainingItemCount !== undefined ? `,"remainingItemCount":${meta.remainingItemCount}` : '';
  return Buffer.concat([
    Buffer.from(
      `{"kind":"Table","apiVersion":"meta.k8s.io/${version}","metadata":{"resourceVersion":${goJSON(meta.resourceVersion)}${cont}${remaining}},"columnDefinitions":`,
    ),
    headers ? columns(printer.columns) : NULL,
    ROWS,
  ]);
}

const NULL = Buffer.from('null');
const ROWS = Buffer.from(',"rows":');
const EMPTY_META = Buffer.from('{}');

/** Whether a decoded object is the initial-events-end bookmark (`k8s.io/initial-events-end: "true"`). */
export function isInitialEventsEnd(o: Obj): boolean {
  return o?.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true';
}

/**
 * One row as chunks: `{"cells":[…][,"conditions":[…]],"object":…}`. `object` is the object's
 * bytes, `decoded` the same parsed; `typeMeta` (`{"kind":K,"apiVersion":V,`) when `object` is a
 * built-in LIST item without them (`{` + the rest): the `Object` form puts them back, as the
 * apiserver's `ConvertToVersion` does. `row`: what prints it (a LIST page's, `TablePrinter.page`),
 * the printer's own by default.
 */
export function tableRow(
  printer: TablePrinter,
  object: Buffer,
  typeMeta: Buffer | undefined,
  decoded: Obj,
  include: IncludeObject,
  version: TableVersion,
  nowMs: number,
  row: (o: Obj, nowMs: number) => PrintedRow = printer.row,
): Buffer[] {
  const printed: PrintedRow = row(decoded, nowMs);
  const conditions = printed.conditions ? `,"conditions":${goJSON(printed.conditions)}` : '';
  const head = Buffer.from(`{"cells":${cellsJSON(printed.cells)}${conditions},"object":`);
  // The initial-events-end bookmark keeps its metadata under `None` (v1.37.2's watch of a Table
  // sends it so a client sees the annotation); under `Object` it is the bookmark object itself,
  // kind and apiVersion included, as `asTable` converts any row's object (checked side by side).
  if (include === 'Metadata' || (include === 'None' && isInitialEventsEnd(decoded))) {
    const span = topLevelValueSpan(object, 'metadata');
    let meta = span && span[1] > span[0] ? object.subarray(span[0], span[1]) : EMPTY_META;
    const annotations = decoded?.metadata?.annotations;
    const gone = (printer.internalAnnotations ?? []).filter(
      (a) => typeof annotations?.[a.key] === 'string' && a.moved(annotations[a.key]),
    );
    if (gone.length > 0)
      meta = withoutAnnotations(
        decoded.metadata,
        gone.map((a) => a.key),
      );
    return [
      head,
      Buffer.from(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/${version}","metadata":`),
      meta,
      CLOSE2,
    ];
  }
  if (include === 'Object')
    return typeMeta ? [head, typeMeta, object.subarray(1), CLOSE] : [head, object, CLOSE];
  return [head, NULL, CLOSE];
}

/** The cells as Go writes them: a bigint (a custom resource's int64 beyond 2^53) as its digits. */
function cellsJSON(cells: readonly Cell[]): string {
  if (!cells.some((c) => typeof c === 'bigint')) return goJSON(cells);
  const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;
  return goJSON(cells.map((c) => (typeof c === 'bigint' ? rawJSON(c.toString()) : c)));
}

/**
 * The ObjectMeta without some annotations (`annotations` omitted once empty: `omitempty`),
 * re-encoded in its stored key order (Go's field order) with Go's escapes.
 */
function withoutAnnotations(metadata: Obj, keys: readonly string[]): Buffer {
  const rest = { ...(metadata.annotations as Record<string, string>) };
  for (const k of keys) delete rest[k];
  const copy: Obj = {};
  for (const [k, v] of Object.entries(metadata as Record<string, unknown>)) {
    if (k !== 'annotations') copy[k] = v;
    else if (Object.keys(rest).length > 0) copy[k] = rest;
  }
  return Buffer.from(goJSON(copy));
}

const CLOSE = Buffer.from('}');
const CLOSE2 = Buffer.from('}}');
