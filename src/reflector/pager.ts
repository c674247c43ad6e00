/**
 * The reflector's LIST path: client-go `tools/cache/reflector.go` `list` (page-size rules,
 * immediate retry at RV="" when the RV is unavailable) over `tools/pager/pager.go`
 * (`ListPager.List` with `FullListIfExpired`).
 */
import type { UpstreamObject } from '../apimachinery/object.ts';
import { isExpired } from '../upstream/api-errors.ts';
import type { Clock } from '../util/clock.ts';
import { ResourceVersionError } from '../util/errors.ts';
import type { ListerWatcher } from './list-watch.ts';
import { isResourceVersionUnavailable, StopRequested } from './reflector-errors.ts';
import type { StatusRecorder } from './reflector-status.ts';
import type { SyncMode, SyncProgress } from './sync-progress.ts';
import type { Snapshot } from './watch-list.ts';

/** client-go pager `defaultPageSize`. */
const DEFAULT_PAGE_SIZE = 500;

/** What {@link Lister} uses of the reflector. */
export interface ListContext {
  /** `pods`, `deployments.apps`, … (error messages). */
  name: string;
  lw: ListerWatcher;
  clock: Clock;
  signal: AbortSignal;
  status: Pick<StatusRecorder, 'noteError'>;
  stopped(): boolean;
  /** client-go `relistResourceVersion`. */
  relistRV(): string;
  /** true: the RV listed from is gone or unknown, list at "" (client-go `setIsLastSyncResourceVersionUnavailable`). */
  setRVUnavailable(unavailable: boolean): void;
  progress(mode: SyncMode, start: number, lastLogAt?: number): SyncProgress;
  /** Hands a complete snapshot to the sink; it becomes the resume point. */
  replace(snapshot: Snapshot, mode: SyncMode, start: number): void;
}

/** client-go reflector `list`, with its one piece of state (`paginatedResult`). */
export class Lister {
  readonly #ctx: ListContext;
  /** Forced page size (client-go `WatchListPageSize`); 0 = client-go's rules. */
  readonly #pageSize: number;
  /** A list at RV="0" came back paginated: the upstream has no watch cache for the resource. */
  #paginatedResult = false;

  constructor(ctx: ListContext, pageSize: number) {
    this.#ctx = ctx;
    this.#pageSize = pageSize;
  }

  /**
   * One snapshot by paginated LIST, handed to `ctx.replace`.
   * @throws ResourceVersionError `KCP_ERR_LIST_NO_RESOURCE_VERSION` when the answer has no RV to
   *   watch from; StopRequested once stopped; the ListerWatcher's errors.
   */
  async list(): Promise<void> {
    const ctx = this.#ctx;
    const start = ctx.clock.now();
    const rv = ctx.relistRV();
    const limit = this.#limit(rv);
    let result: ListResult;
    try {
      result = await listAllPages(ctx, rv, limit, ctx.progress('list', start, start));
    } catch (err) {
      if (!isResourceVersionUnavailable(err)) throw err;
      if (ctx.stopped()) throw new StopRequested();
      // "Retry immediately if the resource version used to list is unavailable."
      ctx.setRVUnavailable(true);
      ctx.status.noteError(err, 'list resource version unavailable; relisting at RV=""');
      result = await listAllPages(ctx, ctx.relistRV(), limit, ctx.progress('list', start, start));
    }
    if (result.resourceVersion === '' || result.resourceVersion === '0') {
      // Without a list RV there is no safe point to watch from (docs/design.md §3: a resource whose
      // RVs do not parse is not cached).
      throw new ResourceVersionError(
        'KCP_ERR_LIST_NO_RESOURCE_VERSION',
        `${ctx.name}: upstream LIST returned no usable resourceVersion`,
      );
    }
    if (rv === '0' && result.paginated) this.#paginatedResult = true;
    ctx.setRVUnavailable(false);
    ctx.replace({ objects: result.items, resourceVersion: result.resourceVersion }, 'list', start);
  }

  /**
   * The page size: the forced one when set; 500 after a paginated answer at RV="0"; 0
   * (unpaginated) for an RV other than "" / "0", which the upstream's watch cache can serve
   * instead of etcd; else 500.
   */
  #limit(rv: string): number {
    if (this.#pageSize > 0) return this.#pageSize;
    if (this.#paginatedResult) return DEFAULT_PAGE_SIZE;
    if (rv !== '' && rv !== '0') return 0;
    return DEFAULT_PAGE_SIZE;
  }
}

/** All pages of one LIST. */
interface ListResult {
  items: UpstreamObject[];
  /** The first page's RV: the snapshot's. */
  resourceVersion: string;
  /** More than one page was needed. */
  paginated: boolean;
}

/**
 * client-go `pager.List` with FullListIfExpired: pages of `limit` items at `rv`; continue requests
 * carry no resourceVersion (kubernetes#85221). When a continue token expired meanwhile (410), one
 * full list at `rv` replaces the pages read so far. `progress` is ticked after every page but the last.
 * @throws StopRequested once stopped; the ListerWatcher's errors otherwise.
 */
async function listAllPages(
  ctx: Pick<ListContext, 'lw' | 'signal' | 'stopped'>,
  rv: string,
  limit: number,
  progress: SyncProgress,
): Promise<ListResult> {
  const items: UpstreamObject[] = [];
  let cont = '';
  let paginated = false;
  let listRV = '';
  for (;;) {
    if (ctx.stopped()) throw new StopRequested();
    let page: Awaited<ReturnType<ListerWatcher['list']>>;
    try {
      page = await ctx.lw.list({ resourceVersion: cont ? '' : rv, limit, continue: cont }, ctx.signal);
    } catch (err) {
      if (!isExpired(err) || cont === '') throw err;
      // The snapshot of the first page was compacted meanwhile: one full list at the same RV.
      page = await ctx.lw.list({ resourceVersion: rv }, ctx.signal);
      return { items: page.items, resourceVersion: page.resourceVersion, paginated };
    }
    for (const it of page.items) items.push(it);
    if (!cont) listRV = page.resourceVersion;
    if (!page.continue) return { items, resourceVersion: listRV || page.resourceVersion, paginated };
    cont = page.continue;
    paginated = true;
    progress.tick(() => items.length);
  }
}
