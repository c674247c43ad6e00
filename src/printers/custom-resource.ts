/**
 * The Table printer of a custom resource, built from its CRD's `additionalPrinterColumns` for
 * one served version as the apiextensions-apiserver builds it (k8s.io/apiextensions-apiserver
 * v0.37.2 `pkg/apiserver/helpers.go` `getColumnsForVersion` / `serveDefaultColumnsIfEmpty`,
 * `pkg/registry/customresource/tableconvertor/tableconvertor.go` `New`, `ConvertToTable`,
 * `cellForJSONValue`): a Name column, then one column per declared column (none declared: Age,
 * a date column of `.metadata.creationTimestamp`); each cell the first result of the column's
 * client-go JSONPath (`jsonpath.ts`), typed by the column's type; a nil cell when the path finds
 * nothing or fails.
 */
import { COLUMN_DEFINITIONS } from './column-definitions.ts';
import { str } from './go-format.ts';
import { since, timeMs } from './human-duration.ts';
import {
  decodeUnstructured,
  findResults,
  GoFloat,
  type GoValue,
  type JSONPath,
  JSONPathUnsupported,
  parseJSONPath,
  printResult,
} from './jsonpath.ts';
import type { Cell, ColumnDefinition, Obj, PrintedRow, TablePrinter } from './table-types.ts';

/**
 * `metav1.ObjectMeta{}.SwaggerDoc()` `name` and `creationTimestamp`: the descriptions of the CRD
 * printer's own Name and Created At columns (generated from the apiserver's code).
 */
const CRD_COLUMNS = COLUMN_DEFINITIONS['apiextensions.k8s.io/customresourcedefinitions'] ?? [];
const NAME_DESCRIPTION = CRD_COLUMNS.find((c) => c.name === 'Name')?.description ?? '';
const CREATION_DESCRIPTION = CRD_COLUMNS.find((c) => c.name === 'Created At')?.description ?? '';

interface Column {
  type: string;
  path: JSONPath;
}

/** `metav1.Time.UnmarshalQueryParameter`'s `time.Parse(time.RFC3339, …)`. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$/;

function validRFC3339(s: string): boolean {
  const m = RFC3339.exec(s);
  if (!m) return false;
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || se > 59) return false;
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (d < 1 || d > days) return false;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return false;
  return true;
}

const INT64_MIN = -(2n ** 63n);

/**
 * Go's `int64(f)` of a float64: truncated; beyond 2^53 a bigint (its exact digits); outside int64
 * the "integer indefinite" amd64 gives (CVTTSD2SQ: int64 min; arm64 would saturate instead), as
 * the apiserver v1.37.2 on amd64 printed 1e21.
 */
function goInt64(f: number): number | bigint {
  const t = Math.trunc(f);
  if (Number.isSafeInteger(t)) return t;
  if (t >= 2 ** 63 || t < -(2 ** 63) || Number.isNaN(t)) return INT64_MIN;
  return BigInt(t);
}

/** `cellForJSONValue`: a non-string column's cell from the path's first result. */
function cellFor(type: string, v: GoValue, nowMs: number): Cell {
  if (v === null || v === undefined) return null;
  const n = typeof v === 'number' ? v : v instanceof GoFloat ? v.value : undefined;
  switch (type) {
    case 'integer':
      // int64 as is (beyond 2^53 a bigint); float64 converted (truncated) to int64.
      if (typeof v === 'bigint') return v;
      return n === undefined ? null : goInt64(n);
    case 'number':
      // float64(int64): a bigint rounded to the nearest double.
      if (typeof v === 'bigint') return Number(v);
      return n ?? null;
    case 'boolean':
      return typeof v === 'boolean' ? v : null;
    case 'string':
      return typeof v === 'string' ? v : null;
    case 'date':
      if (typeof v !== 'string') return null;
      if (v === '' || v === 'null') return '<unknown>';
      if (!validRFC3339(v)) return '<invalid>';
      return timeMs(v) === undefined ? '<unknown>' : since(v, nowMs);
  }
  return null;
}

/**
 * The printer of version `version` of a CRD (the decoded object), or undefined when the CRD does
 * not list that version or a column's path uses what the port lacks (`range`/`end`) or is too
 * long or nested for its recursive parser (a RangeError). A column
 * whose path does not parse ends the columns there, as `tableconvertor.New`'s error leaves
 * them (the apiserver logs it and serves the columns before it).
 */
export function customResourcePrinter(crd: Obj, version: string): TablePrinter | undefined {
  const v = ((crd?.spec?.versions ?? []) as Obj[]).find((x) => x?.name === version);
  if (!v) return undefined;
  const declared = (v.additionalPrinterColumns ?? []) as Obj[];
  const defs = declared.length
    ? declared
    : [
        {
          name: 'Age',
          type: 'date',
          description: CREATION_DESCRIPTION,
          jsonPath: '.metadata.creationTimestamp',
        },
      ];
  const columns: ColumnDefinition[] = [
    { name: 'Name', type: 'string', format: 'name', description: NAME_DESCRIPTION, priority: 0 },
  ];
  const paths: Column[] = [];
  for (const d of defs) {
    const jsonPath = str(d.jsonPath);
    let path: JSONPath;
    try {
      path = parseJSONPath(`{${jsonPath}}`);
    } catch (err) {
      // range/end, or a path nested or long beyond the recursive parser's stack (the apiserver
      // parses it): not printed here, the apiserver prints it.
      if (err instanceof JSONPathUnsupported || err instanceof RangeError) return undefined;
      break;
    }
    paths.push({ type: str(d.type), path });
    columns.push({
      name: str(d.name),
      type: str(d.type),
      format: str(d.format),
      description:
        str(d.description) || `Custom resource definition column (in JSONPath format): ${jsonPath}`,
      priority: typeof d.priority === 'number' ? d.priority : 0,
    });
  }
  return {
    columns,
    emptyRows: '[]',
    decode: decodeUnstructured,
    row(o: Obj, nowMs: number): PrintedRow {
      const cells: Cell[] = [str(o?.metadata?.name)];
      for (const c of paths) {
        const [results, err] = findResults(c.path, o);
        const first = results[0];
        if (err || !first || first.length === 0) {
          cells.push(null);
          continue;
        }
        const value = first[0];
        cells.push(c.type === 'string' ? printResult(value) : cellFor(c.type, value, nowMs));
      }
      return { cells };
    },
  };
}
