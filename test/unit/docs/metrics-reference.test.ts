import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createMetrics } from '../../../src/ops/metrics.ts';
import { tableRows } from '../../support/markdown.ts';

// docs/operations.md documents every metric; this keeps its table equal to the registry.
const doc = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8');

describe('docs/operations.md metrics reference', () => {
  it('lists every kube_cache_proxy_ metric with its type and labels, and nothing else', async () => {
    const m = createMetrics({ processMetrics: false });
    // Registered by the wiring only when the main listener serves TLS.
    m.registry.registerMetric(m.servingCertificateExpiry);
    const actual = (await m.registry.getMetricsAsJSON())
      .map((x) => {
        const { labelNames } = m.registry.getSingleMetric(x.name) as unknown as { labelNames: string[] };
        return `${x.name} | ${x.type} | ${labelNames.join(', ')}`;
      })
      .sort();
    const documented = tableRows(doc)
      .filter((cells) => /^`kube_cache_proxy_[a-z_]+`$/.test(cells[0] ?? ''))
      .map(([name, type, labels]) => `${name!.slice(1, -1)} | ${type} | ${labels}`)
      .sort();
    assert.deepEqual(documented, actual);
  });
});
