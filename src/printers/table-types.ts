/**
 * The shapes of a `meta.k8s.io` Table as the apiserver's printers build it
 * (apimachinery `pkg/apis/meta/v1` `Table`, `TableColumnDefinition`, `TableRow`,
 * `TableRowCondition`), and of a printer: what turns one decoded object into its row.
 */

/** `metav1.TableColumnDefinition`: every field is always written (no omitempty). */
export interface ColumnDefinition {
  name: string;
  /** OpenAPI type: `string`, `integer`, `number`, `boolean`, `date`. */
  type: string;
  format: string;
  description: string;
  /** 0 = always shown, 1 = `-o wide` only. */
  priority: number;
}

/**
 * One cell as Go's `encoding/json` writes the printer's `interface{}` value: a Go `string`, an
 * integer (`int`, `int32`, `int64`: a JSON number; a bigint beyond 2^53, only a custom resource's
 * int64), a `bool`, or `nil` (a CRD column whose path found nothing).
 */
export type Cell = string | number | bigint | boolean | null;

/** `metav1.TableRowCondition` (only `printPod` sets one: a completed pod). */
export interface RowCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

/** One row's printed part: its cells in column order, and its conditions when the printer sets some. */
export interface PrintedRow {
  cells: Cell[];
  conditions?: readonly RowCondition[];
}

/**
 * A decoded object as JSON gives it (the cache's bytes parsed): printers read it defensively,
 * an absent field being Go's zero value.
 */
// biome-ignore lint/suspicious/noExplicitAny: printers read arbitrary API objects, as Go reads typed ones
export type Obj = any;

/**
 * The rows of one LIST (page) for a printer whose rows depend on the whole list
 * (`printStorageClassList`): `row` prints one of its items; `key` names what it took from the
 * list (rows printed with equal keys are equal: the row cache's key).
 */
export interface PagePrinter {
  key: string;
  row(obj: Obj, nowMs: number): PrintedRow;
}

/**
 * A resource's Table printer: its column definitions (all of them: the apiserver's
 * `TableConvertor` asks for `Wide`), and the row of one object printed at `nowMs` (Unix ms, for
 * the ages). `emptyRows` is what an empty list prints as `rows`: `[]` for the printers of
 * pkg/printers/internalversion (their `make(…, 0)`), `null` for the default and CRD convertors.
 */
export interface TablePrinter {
  columns: readonly ColumnDefinition[];
  row(obj: Obj, nowMs: number): PrintedRow;
  /** How the object's JSON is decoded for `row` (default JSON.parse). @throws SyntaxError. */
  decode?(text: string): Obj;
  emptyRows: '[]' | 'null';
  /**
   * A LIST's rows when they depend on the whole list (the apiserver's `printXList` looks at
   * every item): given the page's decoded items, what prints them; `row` prints a GET or a
   * watch event (one object, as the apiserver's single-object printer).
   */
  page?(items: readonly Obj[]): PagePrinter;
  /**
   * Annotations the apiserver's conversion to its internal type moves into a field or drops (so
   * the row's PartialObjectMetadata, built from the internal object, lacks them): DaemonSet's
   * `deprecated.daemonset.template.generation` (when an integer), Deployment's
   * `deprecated.deployment.rollback.to` (when set) — k8s.io/kubernetes `pkg/apis/apps/v1/conversion.go`;
   * HorizontalPodAutoscaler's autoscaling/v1 round-trip annotations (always) —
   * `pkg/apis/autoscaling/v2/conversion.go` `DropRoundTripHorizontalPodAutoscalerAnnotations`.
   */
  internalAnnotations?: readonly { key: string; moved: (value: string) => boolean }[];
}
