import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ROLLOUT_NODES,
  type RolloutDoc,
  type RolloutRow,
  renderRollout,
  spread,
} from '../../../../bench/report/rollout-report.ts';

test('spread: median of an odd and an even count, min and max', () => {
  assert.deepEqual(spread([3, 1, 2]), { median: 2, min: 1, max: 3 });
  assert.deepEqual(spread([4, 1, 3, 2]), { median: 2.5, min: 1, max: 4 });
  assert.ok(Number.isNaN(spread([]).median));
});

const row = (
  run: number,
  mode: 'cold' | 'warm',
  listBytes: number,
  cpu: number,
  relists: number,
): RolloutRow => ({
  run,
  mode,
  rolloutS: 60,
  restartMs: [3000, 4000, 5000],
  shutdownMs: [100, 100, 100],
  upstreamBytes: 2 * listBytes,
  upstreamBytesAboveSteady: listBytes,
  steadyBytesPerS: [1000, 1100],
  apiserverLists: { pods: 2, services: 2, endpointslices: 2 },
  apiserverListBytes: { pods: listBytes / 2, services: listBytes / 2, endpointslices: 0 },
  apiserverWatchEventBytes: { pods: 10, services: 20, endpointslices: 0 },
  apiserverWatchEventBytesAboveSteady: 30,
  steadyWatchEventBytesPerS: [100, 90],
  tokenReviews: 6,
  subjectAccessReviews: 18,
  apiserverCpuS: cpu + 1,
  apiserverCpuAboveSteadyS: cpu,
  steadyApiserverCores: [0.1, 0.12],
  writesDuring: 600,
  agentWatches: 27,
  agentRelists: relists,
  agentRewatches: 27,
  agentRetries: 40,
  agentErrors: 0,
  proxies: {
    relists: {},
    upstreamRequests: {
      'LIST pods 200': 1,
      'LIST services 200': 1,
      'LIST endpointslices 200': 1,
      'WATCH pods 200': 1,
    },
    passedUpstream: {},
    snapshotLoads: {},
  },
  load1: [20, 22],
});

const doc: RolloutDoc = {
  date: '2026-12-06T18:00:00.000Z',
  kubeApiserver: 'v1.37.2',
  params: {
    nodes: 3,
    podsPerNode: 50,
    agentsPerNode: 3,
    services: 1000,
    endpointSlices: 1000,
    writesPerS: 10,
    runs: 2,
    steadyS: 15,
    settleS: 10,
    graceS: 30,
  },
  cli: 'dist/kube-cache-proxy.js',
  rows: [
    row(1, 'cold', 3_000_000, 6, 10),
    row(1, 'warm', 30_000, 1.5, 0),
    row(2, 'cold', 6_000_000, 3, 14),
    row(2, 'warm', 60_000, 0.9, 0),
  ],
};

test('renderRollout: medians with their min–max per mode and warm ÷ cold', () => {
  const md = renderRollout(doc);
  assert.match(
    md,
    /\| apiserver LIST bytes +\| 4,500,000 \(3,000,000–6,000,000\) +\| 45,000 \(30,000–60,000\) +\| 0\.01 +\|/,
  );
  assert.match(md, /\| agent relists +\| 12 \(10–14\) +\| 0 +\| 0 +\|/);
  assert.match(md, /\| apiserver CPU s above steady +\| 4\.5 \(3–6\) +\| 1\.2 \(0\.9–1\.5\) +\| 0\.267 +\|/);
});

test('renderRollout: the extrapolation is N × (median ÷ K)', () => {
  const md = renderRollout(doc);
  assert.equal(ROLLOUT_NODES, 5000);
  // Upstream bytes: cold 2 × 4,500,000 / 3 = 3,000,000 per node, × 5,000; warm 2 × 45,000 / 3 = 30,000.
  assert.match(md, /\| upstream bytes +\| 3,000,000 +\| 15,000,000,000 +\| 30,000 +\| 150,000,000 +\|/);
  // The proxies' LISTs: 3 per rollout (one per resource) in these rows, 1 per node.
  assert.match(md, /\| LISTs sent by the new proxies +\| 1 +\| 5,000 +\| 1 +\| 5,000 +\|/);
  // CPU (whole rollout): cold 5.5 / 3 per node → 9,166.67 s; warm 2.2 / 3 → 3,666.67 s.
  assert.match(md, /\| apiserver CPU s +\| 1\.83 +\| 9,166\.67 +\| 0\.73 +\| 3,666\.67 +\|/);
  // A node restart's median is 4 s: 5,000 × 4 s = 5.6 h.
  assert.match(
    md,
    /\| rollout hours at maxUnavailable 1 \(node restart → ready × N\) +\| 4 s +\| 5\.6 +\| 4 s +\| 5\.6 +\|/,
  );
});
