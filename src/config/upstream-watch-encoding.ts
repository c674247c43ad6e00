/**
 * `--upstream-watch-encoding`, an entry of `OPTIONS` (`config.ts`; its `OptionSpec` shape): the
 * `Accept-Encoding` of the reflectors' watches. Why identity by default: docs/design.md §2 (a
 * gzipped stream is gunzipped off the event loop, and its events reached the cache about 1.5 ms
 * later, after RV="" reads that followed a direct write).
 */
export const WATCH_ENCODING_OPTIONS = [
  {
    key: 'upstreamWatchEncoding',
    flag: 'upstream-watch-encoding',
    env: 'KCP_UPSTREAM_WATCH_ENCODING',
    kind: 'enum',
    values: ['identity', 'gzip'],
    default: 'identity',
    description:
      'Accept-Encoding of the upstream watches that fill the caches: "identity" (events arrive as sent, decoded at once) or "gzip" (about a quarter of the bytes of a cold sync, but each event is decoded off the event loop: about 1.5 ms later, so RV="" reads miss more writes made directly against the apiserver). LISTs and discovery always ask for gzip.',
  },
] as const;
