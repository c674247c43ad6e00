/**
 * The one event loop of both the watch-list burst and the live watch: client-go
 * `tools/cache/reflector.go` `handleAnyWatch` (with `StreamWatcher`'s treatment of broken and
 * undecodable streams, `tools/watch` / `apimachinery/pkg/watch/streamwatcher.go`).
 */
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import type { UpstreamObject } from '../apimachinery/object.ts';
import type { Status } from '../apimachinery/status.ts';
import type { Clock } from '../util/clock.ts';
import { UpstreamError, VeryShortWatchError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { WatchStream } from './list-watch.ts';
import type { LivenessWatchdog } from './liveness.ts';
import { errText, LivenessExpired, StopRequested } from './reflector-errors.ts';
import type { WatchEvent } from './watch-decoder.ts';

/** `metav1.InitialEventsAnnotationKey`: marks the bookmark that ends a watch-list burst. */
const INITIAL_EVENTS_END_ANNOTATION = 'k8s.io/initial-events-end';

/** A store operation of an event. */
export type StoreOp = 'add' | 'update' | 'delete';

/** Where the events of a stream go (the watch-list temporary store, or the sink). */
export interface WatchHandlers {
  store(op: StoreOp, obj: UpstreamObject): void;
  /** `raw`: the bookmark's `object` bytes as received. */
  bookmark(rv: string, raw: Buffer): void;
  /** After every event: its RV, and whether any event but ADDED was seen on this stream. */
  onRV(rv: string, eventReceivedBesidesAdded: boolean): void;
  /** Called every 256 events (the progress log of a long burst). */
  progress?: () => void;
}

/** What the loop reads from the reflector. */
export interface WatchHandlerContext {
  /** The expected kind and apiVersion of every event's object. */
  info: ResourceInfo;
  /** `pods`, `deployments.apps`, … (error messages). */
  name: string;
  clock: Clock;
  log: Logger;
  stopped(): boolean;
  liveness: Pick<LivenessWatchdog, 'expired' | 'touch'>;
  /** The RV last published: a live BOOKMARK not above it is not repeated. */
  lastSyncRV(): string;
  /** An event of the expected kind arrived on a live (not watch-list burst) stream. */
  onLiveEvent(): void;
  /**
   * A BOOKMARK arrived on a live stream that is not a watch-list's initial-events-end one: the
   * upstream sends periodic bookmarks for this resource (the apiserver's watch cache does, about
   * once a minute; a resource it serves from etcd, without the cache, gets none).
   */
  onPeriodicBookmark?(): void;
}

/**
 * client-go `handleAnyWatch`. Returns true when it stopped at the initial-events-end bookmark
 * (`exitOnInitialEventsEnd`), false when the server ended the stream. `start` (ms since epoch)
 * is when the watch request was sent.
 * @throws the ERROR event's Status as {@link UpstreamError}; an undecodable event as a 500
 *   UpstreamError; {@link VeryShortWatchError} for a stream that ended within 1 s without events;
 *   {@link LivenessExpired}; {@link StopRequested}.
 */
export async function handleAnyWatch(
  ctx: WatchHandlerContext,
  w: WatchStream,
  start: number,
  exitOnInitialEventsEnd: boolean,
  h: WatchHandlers,
): Promise<boolean> {
  let eventCount = 0;
  let besidesAdded = false;
  for (;;) {
    let ev: WatchEvent | undefined;
    try {
      ev = await w.next();
    } catch (err) {
      if (ctx.stopped()) throw new StopRequested();
      if (ctx.liveness.expired) throw new LivenessExpired();
      if (err instanceof SyntaxError) {
        // client-go StreamWatcher: an undecodable event is an internal error event.
        throw new UpstreamError(500, `unable to decode an event from the watch stream: ${err.message}`);
      }
      // client-go StreamWatcher: a broken connection (EOF, reset, timeout) ends the watch
      // like a normal close; the caller re-watches from the last RV.
      ctx.log.debug({ err: errText(err) }, 'watch stream broken; treating as closed');
      ev = undefined;
    }
    if (ctx.stopped()) throw new StopRequested();
    if (ctx.liveness.expired) throw new LivenessExpired();
    if (!ev) break;
    ctx.liveness.touch();
    if (ev.type === 'ERROR') throw UpstreamError.fromStatus(ev.object.object as unknown as Partial<Status>);
    const o = ev.object.object;
    if (o.kind !== ctx.info.kind || o.apiVersion !== ctx.info.apiVersion) {
      ctx.log.warn(
        {
          expected: `${ctx.info.apiVersion}, Kind=${ctx.info.kind}`,
          got: `${o.apiVersion}, Kind=${o.kind}`,
        },
        'dropping watch event of an unexpected kind',
      );
      continue;
    }
    if (!exitOnInitialEventsEnd) ctx.onLiveEvent();
    const rv = o.metadata?.resourceVersion ?? '';
    let endOfInitialEvents = false;
    switch (ev.type) {
      case 'ADDED':
        h.store('add', ev.object);
        break;
      case 'MODIFIED':
        besidesAdded = true;
        h.store('update', ev.object);
        break;
      case 'DELETED':
        besidesAdded = true;
        h.store('delete', ev.object);
        break;
      case 'BOOKMARK': {
        besidesAdded = true;
        const initialEnd = o.metadata?.annotations?.[INITIAL_EVENTS_END_ANNOTATION] === 'true';
        if (exitOnInitialEventsEnd) {
          endOfInitialEvents = initialEnd;
          if (endOfInitialEvents) h.bookmark(rv, ev.object.raw);
          break;
        }
        if (!initialEnd) ctx.onPeriodicBookmark?.();
        if (rv !== '' && rvGreater(rv, ctx.lastSyncRV())) {
          // Progress without a change; an RV the sink already has is not repeated.
          h.bookmark(rv, ev.object.raw);
        }
        break;
      }
    }
    h.onRV(rv, besidesAdded);
    eventCount++;
    if (exitOnInitialEventsEnd && endOfInitialEvents) return true;
    if (h.progress && eventCount % 256 === 0) h.progress();
  }
  if (ctx.clock.now() - start < 1_000 && eventCount === 0) {
    throw new VeryShortWatchError(
      `very short watch: ${ctx.name}: watch lasted less than a second and no items received`,
    );
  }
  return false;
}

/** a > b as uint64 RVs; true when either does not parse (let the sink decide). */
function rvGreater(a: string, b: string): boolean {
  if (b === '') return true;
  try {
    return BigInt(a) > BigInt(b);
  } catch {
    return true;
  }
}
