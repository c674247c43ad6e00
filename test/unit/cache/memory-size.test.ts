import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { KubeObject } from '../../../src/apimachinery/object.ts';
import { WatchCache } from '../../../src/cache/watch-cache.ts';
import { churnConfigMap, churnPod } from '../../support/churn-objects.ts';
import { resourceInfo } from '../../support/resource-info.ts';
import { ALL, PODS } from '../../support/watch-cache-fixtures.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** V8 heap plus Buffer contents, after a full GC. */
function held(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/**
 * As the reflector's decoder makes it: bytes in a slice of Node's shared Buffer pool, and the
 * object parsed from them (the cache keeps its own copy of such bytes, see `ownedBytes`).
 */
function upstream(o: Record<string, unknown>) {
  const raw = Buffer.from(JSON.stringify(o));
  return { raw, object: JSON.parse(raw.toString('utf8')) as KubeObject };
}

/**
 * Fills a cache of `resource` with `objects` entries, churns `events` MODIFIED events through
 * it with a LIST and a snapshot watch in between (building the list-item and ADDED-line
 * copies), and returns what it really holds next to what it counts.
 */
function measure(
  resource = PODS,
  make: (name: string, rv: number, gen: number) => Record<string, unknown>,
  objects: number,
  events: number,
): { real: number; counted: number; historyBytes: number } {
  const before = held();
  const cache = new WatchCache({ resource, historyMaxBytes: Number.POSITIVE_INFINITY });
  cache.replace(
    Array.from({ length: objects }, (_, i) => upstream(make(`obj-${i}-abcde`, 10 + i, 0))),
    String(10 + objects),
  );
  let rv = 100 + objects;
  for (let k = 0; k < events; k++) {
    if (k === events / 2) {
      cache.list(ALL);
      cache.watch(ALL).close();
    }
    cache.update(upstream(make(`obj-${k % objects}-abcde`, rv++, k)));
  }
  cache.list(ALL);
  const real = held() - before;
  const s = cache.stats();
  assert.equal(s.historyEvents, events);
  const counted = s.bytes + s.historyBytes;
  cache.close();
  return { real, counted, historyBytes: s.historyBytes };
}

describe('issue 11 item 14: memory accounting', () => {
  it('issue 11 item 14: store and history bytes count what the cache really holds (Pods)', () => {
    const m = measure(PODS, (n, rv, gen) => churnPod('ns', n, rv, gen), 200, 2000);
    const ratio = m.counted / m.real;
    assert.ok(
      ratio > 0.85 && ratio < 1.2,
      `counted ${m.counted} for ${m.real} really held (×${ratio.toFixed(2)})`,
    );
  });

  it('issue 11 item 14: store and history bytes count what the cache really holds (large ConfigMaps)', () => {
    const cms = resourceInfo('v1', 'configmaps', 'ConfigMap');
    const m = measure(cms, (n, rv, gen) => churnConfigMap('ns', n, rv, gen, 16 * 1024), 50, 500);
    const ratio = m.counted / m.real;
    assert.ok(
      ratio > 0.85 && ratio < 1.2,
      `counted ${m.counted} for ${m.real} really held (×${ratio.toFixed(2)})`,
    );
  });
});
