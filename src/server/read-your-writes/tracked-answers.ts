/**
 * Which answers passed upstream feed read-your-writes, and how: the write tracker
 * (`write-tracker.ts`) learns a write's RV (or a delete to see gone) from the write's answer, and
 * the RV a LIST or GET answer showed its client, so that a later RV="" read is never answered
 * from an older cache; a scoped cache never waits for objects outside its scope
 * (`CacheRegistry.mayHold`). The answers are read by the tee interceptor (`answer-tee.ts`).
 */
import type { KubeObject } from '../../apimachinery/object.ts';
import type { ResourceRequest } from '../../apimachinery/request-info.ts';
import type { Clock } from '../../util/clock.ts';
import type { CacheRegistry } from '../cache-registry.ts';
import type { UpstreamReason } from '../delegate.ts';
import { answerMeta } from './answer-meta.ts';
import { type AnswerTee, MAX_TEE_BYTES, READ_PREFIX_BYTES } from './answer-tee.ts';
import { answerRV, type WriteTracker, writeEffectOf, writeKey } from './write-tracker.ts';

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A request passed upstream, as read-your-writes looks at it. */
export interface TrackedRequest {
  /** The resource path parsed; undefined for other paths. */
  info: ResourceRequest | undefined;
  method: string;
  query: URLSearchParams;
  longRunning: boolean;
  /** Why it goes upstream. */
  reason: UpstreamReason | undefined;
  /** When it was admitted (ms, the serve clock). */
  started: number;
}

/**
 * The tee of a request passed upstream (`answer-tee.ts`), for writes and short reads of a
 * resource path; undefined for any other request. Its answer is read only when, as the answer
 * arrives, a cache can see the resource's writes (`CacheRegistry.tracksWritesTo`, the tee's
 * `wanted`): a cache started while the request was in flight (on demand, or a configured
 * resource discovered late) is registered before its reflector lists, so a write answered
 * before that is in the cache's first snapshot, and one answered after is tracked here (deciding
 * when the request was sent left the second kind untracked: a GET right after a PATCH was
 * answered from the new cache without the PATCH). What is tracked is bounded by the registered
 * caches. A write's answer records its effect (its RV, or a delete to see gone); a read's answer
 * the RV its client was shown, or makes the resource blind when that cannot be read
 * (`write-tracker.ts`). A read passed upstream because its resource is not cached (reason
 * `not-cached`) is read too, only for the RV it showed (`WriteTracker.shownUpstream`, at most
 * 1,024 resources for 75 s): it may be the LIST that starts an on-demand cache, and a watch
 * from that RV is then forwarded rather than refused by the new cache (serve-watch.ts).
 */
export function answerTeeFor(
  registry: CacheRegistry,
  writes: WriteTracker,
  clock: Clock,
  x: TrackedRequest,
): AnswerTee | undefined {
  const info = x.info;
  if (!info) return undefined;
  const key = writeKey(info.group, info.resource);
  // Decided once, at the status line; the pass-through asks again to size its buffer.
  let decided: boolean | undefined;
  const wanted = () => {
    decided ??= registry.tracksWritesTo(info.group, info.resource, info.namespace);
    return decided;
  };
  if (WRITE_METHODS.has(x.method)) {
    // A server-side dry run persists nothing (its answer has no resourceVersion): not a write.
    if (x.query.has('dryRun')) return undefined;
    return {
      maxBytes: MAX_TEE_BYTES,
      wanted,
      onAnswer: (body, complete, headers) => {
        const meta = answerMeta(body, headers, complete);
        // A scoped cache never sees writes outside its scope: waiting for them would stall.
        if (
          !registry.mayHold(info.group, info.resource, info.namespace, wholeObject(meta, complete, headers))
        )
          return;
        writes.apply(key, writeEffectOf(meta, x.method, info.namespace), clock.now(), x.started);
      },
    };
  }
  // Reads of the object or collection (not subresources such as `log`, not watches).
  if (x.method !== 'GET' || x.longRunning || info.subresource !== undefined) return undefined;
  // A read of a resource not cached (yet) is still read for the RV it shows: it may be the one
  // that starts an on-demand cache, whose first snapshot comes after it, and its client may
  // watch from that RV next (`WriteTracker.shownUpstream`, used by serve-watch.ts).
  const notCached = x.reason === 'not-cached';
  return {
    maxBytes: READ_PREFIX_BYTES,
    wanted: () => wanted() || notCached,
    onAnswer: (body, complete, headers) => {
      const meta = answerMeta(body, headers, complete);
      if (!wanted()) {
        const rv = meta?.kind === 'Status' ? undefined : answerRV(meta);
        if (rv !== undefined) writes.shownUpstream(key, rv, x.started);
        return;
      }
      if (x.reason === 'outside-scope') {
        // Outside a scoped cache: a LIST shows RVs of objects the cache never sees (only its
        // events and bookmarks move its RV, ~1/min), a GET one of an object that may be in
        // the scope (its event not yet arrived: then the cache must reach it).
        if (info.name === undefined || meta?.kind === 'Status') return;
        const obj = wholeObject(meta, complete, headers);
        if (obj !== undefined && !registry.mayHold(info.group, info.resource, info.namespace, obj)) return;
      }
      const rv = answerRV(meta);
      if (rv !== undefined) writes.shown(key, rv, x.started);
      else writes.blind(key, clock.now());
    },
  };
}

/** The answer's whole object when it is a complete plain JSON object (not a Status or a list). */
function wholeObject(
  meta: ReturnType<typeof answerMeta>,
  complete: boolean,
  headers: { contentType?: string | undefined },
): KubeObject | undefined {
  if (!complete || meta === undefined || meta.kind === 'Status' || Array.isArray(meta.items))
    return undefined;
  const type = headers.contentType ?? '';
  if (!type.startsWith('application/json') || type.includes('as=')) return undefined;
  return meta.metadata ? (meta as unknown as KubeObject) : undefined;
}
