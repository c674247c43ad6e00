import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createMetrics } from '../../../src/ops/metrics.ts';

// deploy/README.md documents every metric; this keeps the table equal to the registry.
const readme = readFileSync(new URL('../../../deploy/README.md', import.meta.url), 'utf8');

describe('deploy/README.md metrics reference', () => {
  it('lists every kube_cache_proxy_ metric with its type and labels, and nothing else', async () => {
    const m = createMetrics({ processMetrics: false });
    const actual = (await m.registry.getMetricsAsJSON())
      .map((x) => {
        const { labelNames } = m.registry.getSingleMetric(x.name) as unknown as { labelNames: string[] };
        return `${x.name} | ${x.type} | ${labelNames.join(', ')}`;
      })
      .sort();
    const documented = [...readme.matchAll(/^\| `(kube_cache_proxy_[a-z_]+)` \| (\w+) \| ([a-z_, ]*) \|/gm)]
      .map((r) => `${r[1]} | ${r[2]} | ${r[3]}`)
      .sort();
    assert.deepEqual(documented, actual);
  });
});
