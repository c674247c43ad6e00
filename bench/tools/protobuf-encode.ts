/**
 * Micro-benchmark of the protobuf encoder (src/apimachinery/protobuf/): a realistic 3-container
 * Pod (test/support/churn-objects.ts `churnPod`, ~4.7 KB of JSON with managedFields) encoded
 * from its JSON bytes, as a GET or a LIST item is, against the JSON-side baselines (JSON.parse
 * alone; JSON.parse + JSON.stringify). Prints µs per pod, best of `ROUNDS` rounds of `N`.
 *
 * usage: node bench/tools/protobuf-encode.ts
 */

import { parseGoJSON } from '../../src/apimachinery/protobuf/encode-object.ts';
import { encodeObjectMessage, encodeParsed } from '../../src/apimachinery/protobuf/envelope.ts';
import { churnPod } from '../../test/support/churn-objects.ts';

const N = 5000;
const ROUNDS = 5;
const pod = churnPod('bench', 'pod-0', 12345, 1);
const json = Buffer.from(JSON.stringify(pod));

function time(what: string, fn: () => unknown): number {
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) fn();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1000 / N);
  }
  console.log(`${what.padEnd(44)} ${best.toFixed(1)} µs/pod`);
  return best;
}

console.log(
  `pod: ${json.length} bytes of JSON, ${encodeObjectMessage('v1', 'Pod', json).length} bytes of protobuf`,
);
const parsed = parseGoJSON(json.toString());
time('JSON.parse (baseline)', () => JSON.parse(json.toString()));
time('JSON.parse + JSON.stringify (baseline)', () => JSON.stringify(JSON.parse(json.toString())));
time('encode from parsed object', () => encodeParsed('api/core/v1.Pod', parsed));
time('encode from JSON bytes (parse + encode)', () => encodeObjectMessage('v1', 'Pod', json));
