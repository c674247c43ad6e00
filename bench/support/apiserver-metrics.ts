/**
 * Upstream load as the apiserver itself counts it, from its Prometheus `/metrics`:
 * `apiserver_request_total` (LIST and WATCH of one resource, every scope and code),
 * `apiserver_response_sizes_sum` (bytes of LIST responses, and of WATCH streams — recorded when a
 * watch ends, so end every watch before the second snapshot). Names from
 * k8s.io/apiserver/pkg/endpoints/metrics/metrics.go, as v1.37.2 exposes them.
 */
import { request } from 'undici';
import type { Upstream } from '../../src/upstream/connection.ts';
import { metricSum } from '../../test/support/prometheus-text.ts';

/** Counters of one resource; take two snapshots and subtract ({@link diffUpstream}). */
export interface UpstreamCounters {
  lists: number;
  watches: number;
  listBytes: number;
  watchBytes: number;
}

/** Reads the counters for `resource` (e.g. `pods`). */
export async function upstreamCounters(up: Upstream, resource: string): Promise<UpstreamCounters> {
  const auth = await up.authorization();
  const res = await request(`${up.baseUrl}/metrics`, {
    dispatcher: up.dispatcher,
    headers: auth ? { authorization: auth } : {},
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`apiserver /metrics: ${res.statusCode}`);
  return {
    lists: metricSum(text, 'apiserver_request_total', { resource, verb: 'LIST' }),
    watches: metricSum(text, 'apiserver_request_total', { resource, verb: 'WATCH' }),
    listBytes: metricSum(text, 'apiserver_response_sizes_sum', { resource, verb: 'LIST' }),
    watchBytes: metricSum(text, 'apiserver_response_sizes_sum', { resource, verb: 'WATCH' }),
  };
}

/** `b − a`, field by field. */
export function diffUpstream(a: UpstreamCounters, b: UpstreamCounters): UpstreamCounters {
  return {
    lists: b.lists - a.lists,
    watches: b.watches - a.watches,
    listBytes: b.listBytes - a.listBytes,
    watchBytes: b.watchBytes - a.watchBytes,
  };
}
