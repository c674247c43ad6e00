/**
 * How the proxy answered the control plane's reads, from its own `/metrics`
 * (`kube_cache_proxy_requests_total` by verb, `served_from` and reason; docs/delegation.md).
 */
import { parsePrometheus } from '../prometheus-text.ts';

/** The proxy's reads (LIST, WATCH, GET) by how they were answered. */
export interface ProxyReads {
  /** verb → answered from the cache. */
  cache: Record<string, number>;
  /** `verb reason resource` → passed upstream. */
  upstream: Record<string, number>;
  /**
   * Watches open on the caches now (`kube_cache_proxy_registered_watchers`): a watch is counted
   * in `cache.WATCH` only when it ends, and informers' watches last minutes.
   */
  openCacheWatchers: number;
}

/** Sums the proxy's `kube_cache_proxy_requests_total` for reads (see {@link ProxyReads}). */
export function proxyReads(metricsText: string): ProxyReads {
  const reads: ProxyReads = { cache: {}, upstream: {}, openCacheWatchers: 0 };
  for (const s of parsePrometheus(metricsText)) {
    if (s.name === 'kube_cache_proxy_registered_watchers') reads.openCacheWatchers += s.value;
    if (s.name !== 'kube_cache_proxy_requests_total') continue;
    const { verb = '', served_from: from, reason = '', resource = '', group = '' } = s.labels;
    if (!['LIST', 'WATCH', 'GET'].includes(verb) || s.value === 0) continue;
    if (from === 'cache') reads.cache[verb] = (reads.cache[verb] ?? 0) + s.value;
    else {
      const key = `${verb} ${reason} ${resource}${group ? `.${group}` : ''}`;
      reads.upstream[key] = (reads.upstream[key] ?? 0) + s.value;
    }
  }
  return reads;
}

/** The upstream reads counted in `b` and not yet in `a` (`a` taken earlier), zero counts left out. */
export function upstreamSince(a: ProxyReads, b: ProxyReads): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(b.upstream)) {
    const d = n - (a.upstream[k] ?? 0);
    if (d > 0) out[k] = d;
  }
  return out;
}
