/**
 * The reflector layer: re-exports the Reflector, its backoff, the HTTP lister-watcher and the
 * LIST / watch-line decoders.
 */
export { Backoff, type BackoffOptions } from './backoff.ts';
export {
  HttpListerWatcher,
  type ListerWatcher,
  type ListOptions,
  type WatchOptions,
  type WatchStream,
} from './list-watch.ts';
export { Reflector, type ReflectorOptions, type ReflectorStatus } from './reflector.ts';
export {
  type DecodedList,
  decodeList,
  decodeWatchLine,
  type WatchEvent,
  type WatchEventType,
} from './watch-decoder.ts';
