/**
 * What a watch cache tells about itself (`watch-cache.ts` `stats()`): the facts `/readyz`,
 * `/debug/cache` and the state-mirroring metrics read (`resources/resource-state.ts` builds the
 * one model from them).
 */

/** The state of one watch cache. */
export interface WatchCacheStats {
  objects: number;
  bytes: number;
  historyEvents: number;
  historyBytes: number;
  /** Window start: the oldest RV a watch may resume from. */
  oldestRV: string;
  currentRV: string;
  watchers: number;
  synced: boolean;
  live: boolean;
  /** Age of the oldest buffered event, ms (0 when none). */
  oldestEventAgeMs: number;
  /** When the oldest buffered event was recorded, ms since the epoch; null when none. */
  oldestEventTimeMs: number | null;
  /** The history's hard cap on events (the ring grows up to it; `historyMaxEvents`). */
  historyCapacity: number;
  /** When the last snapshot was stored (`replace`), ms since the epoch; null before. */
  lastSyncTimeMs: number | null;
  /** When the last event or bookmark arrived, ms since the epoch; null before. */
  lastProgressTimeMs: number | null;
  /** Watchers ended for cause so far (buffer full without parking, fell out of the window, parked bound). */
  terminatedWatchers: number;
  /** Watchers parked right now (queue full; resumed from the history when their client reads). */
  parkedWatchers: number;
  /** Served from a snapshot the upstream has not proven yet: when it was taken (ms since the epoch); null otherwise. */
  restoredFromMs: number | null;
}
