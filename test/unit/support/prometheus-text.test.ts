import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metricSum, parsePrometheus } from '../../support/prometheus-text.ts';

// The apiserver's /metrics has summaries (`_sum`, `_count`, quantiles) next to histograms.
const TEXT = `# HELP a_seconds A summary.
# TYPE a_seconds summary
a_seconds{type="admit",quantile="0.5"} 0.1
a_seconds_sum{type="admit"} 0.5
a_seconds_count{type="admit"} 4
# HELP b_seconds A histogram.
# TYPE b_seconds histogram
b_seconds_bucket{le="+Inf"} 2
b_seconds_sum 1.5
b_seconds_count 2
# HELP requests_total A counter.
# TYPE requests_total counter
requests_total{resource="pods",subresource=""} 3
requests_total{resource="configmaps",subresource="pods"} 5
`;

test('summaries and histograms: their suffixed samples belong to their family', () => {
  assert.equal(parsePrometheus(TEXT).length, 8);
  assert.equal(metricSum(TEXT, 'a_seconds_count', { type: 'admit' }), 4);
  assert.equal(metricSum(TEXT, 'b_seconds_sum'), 1.5);
});

test('metricSum matches label values exactly (resource="pods" is not subresource="pods")', () => {
  assert.equal(metricSum(TEXT, 'requests_total', { resource: 'pods' }), 3);
  assert.equal(metricSum(TEXT, 'requests_total'), 8);
});

test('a sample without a TYPE, or a summary _bucket, is rejected', () => {
  assert.throws(() => parsePrometheus('x_total 1\n'), /without a TYPE/);
  assert.throws(() => parsePrometheus('# TYPE a summary\na_bucket{le="1"} 1\n'), /without a TYPE/);
});
