/**
 * The watch-scenario writer: merge-PATCHes the `bench.kcp/sent` annotation of pods round-robin,
 * stamped with the send time (performance.timeOrigin + performance.now(), ms), at a target rate
 * or as fast as `concurrency` in-flight requests allow (`rate: 'max'`). Straight to the apiserver.
 */
import { request } from 'undici';
import type { Upstream } from '../../src/upstream/connection.ts';

/** What a writer run achieved. */
export interface WriterResult {
  target: number | 'max';
  sent: number;
  failed: number;
  /** Successful writes per second. */
  achievedRate: number;
}

/** PATCHes `pods` (`namespace/name`) for `durationMs`. */
export async function runWriter(
  up: Upstream,
  pods: string[],
  rate: number | 'max',
  durationMs: number,
  concurrency = 16,
): Promise<WriterResult> {
  const auth = await up.authorization();
  let next = 0;
  let sent = 0;
  let failed = 0;
  const one = async () => {
    const [ns, name] = pods[next++ % pods.length]!.split('/');
    const stamp = (performance.timeOrigin + performance.now()).toFixed(3);
    const res = await request(`${up.baseUrl}/api/v1/namespaces/${ns}/pods/${name}`, {
      method: 'PATCH',
      dispatcher: up.dispatcher,
      headers: {
        'content-type': 'application/merge-patch+json',
        accept: 'application/json',
        ...(auth ? { authorization: auth } : {}),
      },
      body: JSON.stringify({ metadata: { annotations: { 'bench.kcp/sent': stamp } } }),
    }).catch(() => undefined);
    await res?.body.dump();
    if (res?.statusCode === 200) sent++;
    else failed++;
  };
  const t0 = performance.now();
  const end = t0 + durationMs;
  const inflight = new Set<Promise<void>>();
  const launch = () => {
    const p = one().finally(() => inflight.delete(p));
    inflight.add(p);
  };
  if (rate === 'max') {
    while (performance.now() < end) {
      while (inflight.size < concurrency) launch();
      await Promise.race(inflight);
    }
  } else {
    // Open loop at `rate`: a tick every 10 ms launches what is due (bounded by 4×concurrency).
    let issued = 0;
    while (performance.now() < end) {
      const due = Math.floor(((performance.now() - t0) / 1000) * rate);
      while (issued < due && inflight.size < concurrency * 4) {
        launch();
        issued++;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  await Promise.all(inflight);
  const s = (performance.now() - t0) / 1000;
  return { target: rate, sent, failed, achievedRate: Math.round(sent / s) };
}
