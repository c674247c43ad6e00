/**
 * The waits before a read is answered from the cache (docs/design.md §3, consistency model):
 * synced at all; for RV="" ("most recent") the read-your-writes checks — the stream proven live,
 * the cache at or past every RV a client was shown by an answer passed upstream and every RV a
 * write through this proxy returned, deletes through it gone from the cache; for RV=N
 * NotOlderThan the cache at N. With `--consistent-reads=proven`, RV="" also needs a freshness
 * proof: the upstream's current revision learnt by one (shared) request, and the cache at it or
 * the upstream's word that the resource had no event in between. Each wait is bounded (`freshnessWaitMs`, `syncWaitMs`); a read
 * that cannot be served gets the {@link UpstreamReason} it is passed upstream with.
 */
import type { ResourceRequest } from '../../apimachinery/request-info.ts';
import type { ServedCache } from '../cache-api.ts';
import type { CacheRead, UpstreamReason } from '../delegate.ts';
import type { ServeContext } from '../serve-context.ts';
import { type PendingDelete, writeKey } from './write-tracker.ts';

/**
 * `cache.waitUntilFresh` that reports how long the request waited and whether the cache caught
 * up (`kube_cache_proxy_watch_cache_read_wait_seconds`).
 */
async function waitFresh(
  cache: ServedCache,
  rv: bigint,
  timeoutMs: number,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<boolean> {
  const t0 = ctx.clock.now();
  const ok = await cache.waitUntilFresh(rv, timeoutMs, signal);
  ctx.onReadWait?.(cache, (ctx.clock.now() - t0) / 1000, ok ? 'fresh' : 'timeout');
  return ok;
}

/** Why a wait that returned false sends the request upstream: the client left, or time ran out. */
function waitFailed(signal: AbortSignal, timeout: UpstreamReason): UpstreamReason {
  return signal.aborted ? 'aborted' : timeout;
}

/** Synced now, or within `syncWaitMs`? (Never answer from a store that has not synced once.) */
async function ready(
  cache: ServedCache,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  if (cache.isSynced()) return undefined;
  if (await cache.waitSynced(ctx.syncWaitMs, signal)) return undefined;
  return waitFailed(signal, 'not-synced');
}

/**
 * May an RV="" ("most recent") read be served from the cache? Only in `cache` mode, while the
 * upstream stream is proven live, once the cache has reached every RV an answer passed
 * upstream showed a client (`behind-upstream` at once otherwise: only an upstream event or
 * bookmark moves the cache there, rarely within a wait), when no answer with an unknown RV
 * awaits one (`write-pending`), and once it has reached every RV a write through this proxy
 * returned for the resource and no longer holds what was deleted through it (waiting up to
 * `freshnessWaitMs` in all).
 */
async function consistentFromCache(
  cache: ServedCache,
  info: ResourceRequest,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  if (ctx.consistentReads === 'upstream') return 'consistent-reads-upstream';
  if (!cache.isLive()) return 'not-live';
  const key = writeKey(info.group, info.resource);
  // After a stream outage the cache may be older than what clients were shown meanwhile: a
  // live stream is not enough, the cache must have caught up with that too (never back in time).
  if (cache.resourceVersion() < ctx.writes.shownRV(key)) return 'behind-upstream';
  // A write or read whose answer could not be read (CBOR, …): its RV is unknown, so only an
  // answer from upstream to a later request can tell what the cache must reach.
  if (ctx.writes.isBlind(key)) return 'write-pending';
  const deadline = ctx.clock.now() + ctx.freshnessWaitMs;
  const required = ctx.writes.required(key);
  if (cache.resourceVersion() < required) {
    if (!(await waitFresh(cache, required, ctx.freshnessWaitMs, ctx, signal)))
      return waitFailed(signal, 'write-pending');
  }
  // Deletes answered without an RV: fresh once the deleted incarnation is gone from the cache.
  // Each event advances the cache RV, so wait for "one more event" until it is gone.
  const pending = ctx.writes.pendingDeletes(key, ctx.clock.now());
  if (pending.length > 0) {
    const gone = new Set<PendingDelete>();
    for (const d of pending) {
      for (;;) {
        const o = cache.get(cache.resource.namespaced ? d.namespace : undefined, d.name);
        if (!o || (d.uid !== undefined && o.object.metadata.uid !== d.uid)) {
          gone.add(d);
          break;
        }
        const left = deadline - ctx.clock.now();
        if (left <= 0 || !(await waitFresh(cache, cache.resourceVersion() + 1n, left, ctx, signal))) {
          ctx.writes.resolveDeletes(key, gone);
          return waitFailed(signal, 'write-pending');
        }
      }
    }
    ctx.writes.resolveDeletes(key, gone);
  }
  if (ctx.consistentReads === 'proven') {
    const unproven = await provenFresh(cache, deadline, ctx, signal);
    if (unproven) return unproven;
  }
  return cache.isLive() ? undefined : 'not-live';
}

/**
 * How long a proven read waits for the cache to reach the upstream's revision by itself before it
 * also asks for a gap proof (ms). An event of the resource arrives within milliseconds of the
 * write's answer; a revision moved by writes to OTHER resources is never reached before the next
 * bookmark (about a minute), so the proof is asked for in parallel rather than after a wait.
 */
const PROOF_GRACE_MS = 20;

/**
 * The freshness proof of `--consistent-reads=proven`: learn the upstream's current revision R
 * (a request sent after this read arrived, shared by the reads that arrived before it was sent;
 * etcd's revision, at least that of every write completed before), then wait until the cache
 * reaches R, or until the upstream proves that the resource had no event between the cache's RV
 * and R (the revision is global: writes to other resources move it too). Bounded by `deadline`;
 * `freshness-unproven` when neither happened, or R could not be learnt.
 */
async function provenFresh(
  cache: ServedCache,
  deadline: number,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  const target = await cache.upstreamRevision?.(signal);
  if (signal.aborted) return 'aborted';
  if (target === undefined) return 'freshness-unproven';
  if (cache.resourceVersion() >= target) return undefined;
  const left = () => Math.max(0, deadline - ctx.clock.now());
  if (await waitFresh(cache, target, Math.min(left(), PROOF_GRACE_MS), ctx, signal)) return undefined;
  if (signal.aborted) return 'aborted';
  const ac = new AbortController();
  const stop = () => ac.abort();
  signal.addEventListener('abort', stop, { once: true });
  try {
    const reached = waitFresh(cache, target, left(), ctx, ac.signal);
    const proved = cache.proveNoEventsBetween
      ? cache.proveNoEventsBetween(cache.resourceVersion(), target, ac.signal)
      : Promise.resolve(false);
    // Whichever says yes first; a failed proof (an event in the range) leaves the wait.
    const first = await Promise.race([reached, proved.then((ok) => (ok ? true : reached))]);
    if (first) return undefined;
    return waitFailed(signal, 'freshness-unproven');
  } finally {
    signal.removeEventListener('abort', stop);
    ac.abort();
  }
}

/** RV=N NotOlderThan: the cache must reach N within `freshnessWaitMs`. */
async function notOlderThan(
  cache: ServedCache,
  rv: bigint,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  if (cache.resourceVersion() >= rv) return undefined;
  if (await waitFresh(cache, rv, ctx.freshnessWaitMs, ctx, signal)) return undefined;
  return waitFailed(signal, 'freshness-timeout');
}

/**
 * Waits until the cache can serve `read`: synced, then for RV="" consistent and for RV=N
 * NotOlderThan fresh enough. Exact, continue and any-RV reads need no wait beyond the sync.
 */
export async function readable(
  cache: ServedCache,
  info: ResourceRequest,
  read: CacheRead,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  const notReady = await ready(cache, ctx, signal);
  if (notReady) return notReady;
  if (read.mode === 'consistent') return consistentFromCache(cache, info, ctx, signal);
  if (read.mode === 'not-older-than') return notOlderThan(cache, read.rv, ctx, signal);
  return undefined;
}
