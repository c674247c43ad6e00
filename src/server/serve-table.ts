/**
 * Table answers from the cache (`kubectl get`, server-side printing): the LIST, GET and WATCH
 * bodies of `as=Table;g=meta.k8s.io;v=v1|v1beta1` built from the cached bytes with the ported
 * printers (`printers/`), as the apiserver's `asTable` (k8s.io/apiserver
 * `endpoints/handlers/response.go`) and its watch encoder (`watchEmbeddedEncoder`: column
 * definitions in the first event only, `null` after) answer them. Ages are printed at the
 * moment of the answer, as the apiserver prints them at its own.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { topLevelValueSpan } from '../apimachinery/json-span.ts';
import { itemView } from '../apimachinery/list-items.ts';
import { StatusError, unknownError } from '../apimachinery/status.ts';
import type { WireLine } from '../apimachinery/watch-event.ts';
import { tablePrinter } from '../printers/registry.ts';
import { RowCache } from '../printers/row-cache.ts';
import {
  type IncludeObject,
  parseIncludeObject,
  type TableVersion,
  tableHead,
  tableRow,
} from '../printers/table-encoding.ts';
import type { Obj, TablePrinter } from '../printers/table-types.ts';
import type { CachedObject, ListPage, ServedCache } from './cache-api.ts';
import { requestForm } from './delegate.ts';
import { writeStatus } from './send-status.ts';
import type { ServeContext } from './serve-context.ts';

/** What a Table request asks for ({@link askedTable}). */
export interface TableAsk {
  printer: TablePrinter;
  version: TableVersion;
  include: IncludeObject;
}

/**
 * The Table a cache-served request asks for: undefined for any other form, `table-printer` when
 * the resource has no printer (any more: a custom resource's CRD left the cache since
 * `delegate`) or `includeObject` is invalid — the request then passes upstream.
 */
export function askedTable(
  headers: IncomingHttpHeaders,
  query: URLSearchParams,
  resource: ResourceInfo,
  printerOf: (r: ResourceInfo) => TablePrinter | undefined = builtInPrinter,
): TableAsk | 'table-printer' | undefined {
  const form = requestForm(headers);
  if (form?.form !== 'table') return undefined;
  const printer = printerOf(resource);
  const include = parseIncludeObject(query.get('includeObject'));
  if (!printer || !include) return 'table-printer';
  return { printer, version: form.version, include };
}

/** The built-in kinds' printers only (custom resources: none). */
function builtInPrinter(r: ResourceInfo): TablePrinter | undefined {
  return r.builtIn ? tablePrinter(r.gvr.group, r.gvr.resource) : undefined;
}

const COMMA = Buffer.from(',');
const OPEN = Buffer.from('[');
const END = Buffer.from(']}\n');
const END_EVENT = Buffer.from(']}}\n');

const typeMetas = new WeakMap<object, Buffer>();

/** `{"kind":K,"apiVersion":V,`: what the apiserver clears from built-in LIST items. */
function typeMetaOf(cache: ServedCache): Buffer {
  let b = typeMetas.get(cache.resource);
  if (!b) {
    b = Buffer.from(
      `{"kind":${JSON.stringify(cache.resource.kind)},"apiVersion":${JSON.stringify(cache.resource.apiVersion)},`,
    );
    typeMetas.set(cache.resource, b);
  }
  return b;
}

/**
 * A LIST page as a Table (its resourceVersion, continue token and remainingItemCount), ending
 * with `\n` as the apiserver's JSON encoder writes it. An empty page prints `"rows":[]` for the
 * pkg/printers kinds and `null` for the default and CRD convertors, as theirs do.
 */
export function tableList(cache: ServedCache, page: ListPage, t: TableAsk, nowMs: number): Buffer[] {
  const meta: { resourceVersion: string; continue?: string; remainingItemCount?: number } = {
    resourceVersion: page.resourceVersion,
  };
  if (page.continue) meta.continue = page.continue;
  if (page.remainingItemCount !== undefined) meta.remainingItemCount = page.remainingItemCount;
  const chunks: Buffer[] = [tableHead(t.version, meta, t.printer, true)];
  if (page.items.length === 0) {
    chunks.push(Buffer.from(`${t.printer.emptyRows}}\n`));
    return chunks;
  }
  // Built-in LIST items lost their kind and apiVersion (`{` + the rest); custom resources keep them.
  const typeMeta = cache.resource.builtIn ? typeMetaOf(cache) : undefined;
  chunks.push(OPEN);
  // A printer that looks at the whole list (storage classes' effective default) sees the page's
  // items decoded; its rows are kept per what it took from the page.
  const items = page.items;
  const decoded = t.printer.page
    ? Array.from({ length: items.length }, (_, i) => decode(t.printer, itemView(items, i)))
    : undefined;
  const pagePrinter = decoded ? t.printer.page?.(decoded) : undefined;
  const variant = pagePrinter ? `${t.include}/${t.version}/${pagePrinter.key}` : `${t.include}/${t.version}`;
  for (let i = 0; i < items.length; i++) {
    if (i > 0) chunks.push(COMMA);
    // The item's bytes are read (a view made) only for a row not printed this second.
    const row = listRows.get(page.entries?.[i], t.printer, variant, nowMs, () => {
      const item = itemView(items, i);
      return tableRow(
        t.printer,
        item,
        typeMeta,
        decoded?.[i] ?? decode(t.printer, item),
        t.include,
        t.version,
        nowMs,
        pagePrinter?.row,
      );
    });
    chunks.push(...row);
  }
  chunks.push(END);
  return chunks;
}

/** A GET as a Table of one row; its resourceVersion is the object's. */
export function tableGet(obj: CachedObject, t: TableAsk, nowMs: number): Buffer[] {
  const { rv, row } = printedObject(obj, obj.wire, t, nowMs);
  return [tableHead(t.version, { resourceVersion: rv }, t.printer, true), OPEN, ...row, END];
}

/**
 * The apiserver's answer when its TableConvertor fails: `asTable` (k8s.io/apiserver v0.37.2
 * `endpoints/handlers/response.go`) returns the printer's error as it is (`GenerateTable`:
 * `results[1].Interface().(error)`, e.g. printControllerRevision's "unexpected GroupVersion
 * string: a/b/c"), and `responsewriters.ErrorToAPIStatus`, its default case, answers it 500 with
 * the error's text as message and no reason (`StatusReasonUnknown`, omitted) — kubectl prints
 * `Error from server: <message>`. A ported printer that throws (an object shape its port did
 * not expect) is answered the same, with its error's message; a StatusError as it is.
 */
export function tablePrintError(err: unknown): StatusError {
  if (err instanceof StatusError) return err;
  return unknownError(err instanceof Error ? err.message : String(err));
}

/**
 * `print()`'s Table chunks; when the printer throws, the apiserver's answer to a failing
 * TableConvertor ({@link tablePrintError}) is written to `res` and logged (one line: the
 * resource, the object's name for a GET, the error; as the apiserver's `runtime.HandleError`
 * "apiserver received an error that is not an metav1.Status"), and undefined returned.
 */
export function printedTable(
  print: () => Buffer[],
  res: ServerResponse,
  resource: ResourceInfo,
  ctx: Pick<ServeContext, 'log'>,
  name?: string,
): Buffer[] | undefined {
  try {
    return print();
  } catch (err) {
    ctx.log?.error(
      {
        group: resource.gvr.group,
        resource: resource.gvr.resource,
        ...(name !== undefined ? { name } : {}),
        err,
      },
      'Table printer failed',
    );
    writeStatus(res, tablePrintError(err));
    return undefined;
  }
}

/** An object's bytes decoded as its printer reads them (a custom resource's int64s exact). */
function decode(printer: TablePrinter, bytes: Buffer): Obj {
  const text = bytes.toString('utf8');
  return printer.decode ? printer.decode(text) : JSON.parse(text);
}

/**
 * Rows printed this second, per cached object (`printers/row-cache.ts`): a LIST item's row, and
 * apart (another value shape under the same key) a GET's or watch event's row with its
 * resourceVersion.
 */
const listRows = new RowCache<Buffer[]>();
const objectRows = new RowCache<{ rv: string; row: Buffer[] }>();

/** One object's row and resourceVersion (for a GET or a watch event's Table), kept per `key`. */
function printedObject(
  key: object | undefined,
  chunks: Buffer | readonly Buffer[],
  t: TableAsk,
  nowMs: number,
): { rv: string; row: Buffer[] } {
  return objectRows.get(key, t.printer, `${t.include}/${t.version}`, nowMs, () => {
    const bytes = Buffer.isBuffer(chunks) ? chunks : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const decoded = decode(t.printer, bytes);
    return {
      rv: String(decoded?.metadata?.resourceVersion ?? ''),
      row: tableRow(t.printer, bytes, undefined, decoded, t.include, t.version, nowMs),
    };
  });
}

/**
 * Turns one watch's event lines (`{"type":T,"object":O}\n`, as the cache streams them) into Table
 * events: each object a Table of one row, its resourceVersion the object's, the column
 * definitions in the first event only. Bookmarks are printed as the apiserver prints them (a
 * row of the empty object; the initial-events-end one with its metadata under `None` and
 * `Metadata`, itself under `Object`); an ERROR event's Status is passed as it is (`doTransformObject`).
 */
export class TableWatchEncoder {
  #headers = true;
  readonly #t: TableAsk;
  readonly #now: () => number;

  /** `now`: Unix ms, read per event (the ages of that event). */
  constructor(t: TableAsk, now: () => number) {
    this.#t = t;
    this.#now = now;
  }

  /** The Table event line of `line`. */
  encode(line: WireLine): Buffer[] {
    const bytes = Buffer.isBuffer(line) ? line : Buffer.concat(line as readonly Buffer[]);
    const headers = this.#headers;
    this.#headers = false;
    const typeSpan = topLevelValueSpan(bytes, 'type');
    const objSpan = topLevelValueSpan(bytes, 'object');
    if (!typeSpan || !objSpan) return [bytes];
    const type = bytes.subarray(typeSpan[0], typeSpan[1]).toString('utf8');
    if (type === '"ERROR"') return [bytes];
    const object = bytes.subarray(objSpan[0], objSpan[1]);
    const t = this.#t;
    // An event line shared by watchers (a Buffer, the history's) is printed once per second.
    const { rv, row } = printedObject(Buffer.isBuffer(line) ? line : undefined, object, t, this.#now());
    return [
      Buffer.from(`{"type":${type},"object":`),
      tableHead(t.version, { resourceVersion: rv }, t.printer, headers),
      OPEN,
      ...row,
      END_EVENT,
    ];
  }
}
