/**
 * Issue 32's kept-message dictionary (apimachinery/protobuf/spliced.ts) through the cache: the
 * first kept Pod unusual (over 2 KiB of own bytes, another shape than the rest), 300 pods of mixed
 * shapes, every one updated over and over (its kept message replaced, the slabs compacted), and
 * LIST bodies cut at odd batch sizes, PartialObjectMetadataList v1 and v1beta1, GET and
 * watch-list frames: each equal to a fresh encode of the same JSON without anything kept.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject, UpstreamObject } from '../../../src/apimachinery/object.ts';
import { bodyBytes } from '../../../src/server/filled-body.ts';
import { protobufGet, protobufList, protobufWatchFrame } from '../../../src/server/protobuf-answers.ts';
import { filledIn } from '../../support/filled-in.ts';
import { ALL, newCache, PODS } from '../../support/watch-cache-fixtures.ts';

let seed = 5;
const rnd = (n: number) => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return (seed >>> 8) % n;
};

/** A pod of shape `shape` (0: the unusual first, 1: plain, 2: with a long annotation, 3: many labels). */
function podOf(name: string, rv: number, shape: number): UpstreamObject {
  const labels: Record<string, string> = {};
  const n = shape === 0 ? 120 : shape === 3 ? 30 + rnd(30) : rnd(4);
  for (let i = 0; i < n; i++) labels[`example.com/label-${i}`] = `value-${rnd(5)}-${'v'.repeat(rnd(20))}`;
  const object = {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name,
      namespace: 'a',
      uid: `00000000-0000-4000-8000-${String(rv).padStart(12, '0')}`,
      resourceVersion: String(rv),
      labels,
      // Every version ~4 KB of JSON: 16 rounds of 300 waste past the arena's compaction threshold.
      ...(shape === 1 && { annotations: { pad: `${'dolor-3 sit-4 '.repeat(280)}${rv}` } }),
      ...(shape !== 1 && {
        annotations: { note: `${'lorem-1 ipsum-2 '.repeat(shape === 2 ? 200 + rnd(100) : 250)}${rv}` },
      }),
    },
    spec: {
      containers: Array.from({ length: 1 + rnd(3) }, (_, i) => ({
        name: `c${i}`,
        image: `registry.example/app:${rv % 5}`,
        ...(shape === 0 && { env: [{ name: 'E', value: 'x'.repeat(500) }], args: ['--a', '--b'] }),
      })),
      nodeName: `node-${rv % 3}`,
    },
    status:
      shape === 0
        ? { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], podIP: '10.0.0.1' }
        : { phase: 'Pending' },
  };
  return { raw: Buffer.from(JSON.stringify(object)), object: object as KubeObject };
}

const drain = (w: { stream: { read(): unknown } }) => {
  const out: unknown[] = [];
  for (let c = w.stream.read(); c !== null; c = w.stream.read()) out.push(c);
  return out;
};

describe('kept messages with the dictionary: every answer equals a fresh encode', () => {
  it('300 pods, unusual first, updated 16 times each (slabs compacted), LISTs cut at odd sizes', () => {
    // A short history: replaced versions are freed as they are evicted, the slabs get sparse.
    const { cache } = newCache({ historyMinAgeMs: 0, historyMinEvents: 0, historyMaxEvents: 50 });
    const shapes = new Map<string, number>();
    const pods = [podOf('a-000-first', 1, 0)];
    for (let i = 1; i < 300; i++) {
      const name = `p-${String(i).padStart(3, '0')}`;
      shapes.set(name, 1 + rnd(3));
      pods.push(podOf(name, 1 + i, shapes.get(name)!));
    }
    cache.replace(pods, '400');
    let rv = 400;
    const check = (round: number) => {
      for (const metadata of [undefined, 'v1', 'v1beta1'] as const) {
        const page = cache.list({ ...ALL, ...(metadata && { metadata }) });
        const fresh = bodyBytes(protobufList(PODS, { ...page, entries: undefined }, metadata));
        assert.ok(fresh.length > 65_536, `${fresh.length} bytes`);
        const step = 1 + rnd(3000);
        for (let k = 0; k < 2; k++)
          assert.ok(
            filledIn(
              protobufList(PODS, cache.list({ ...ALL, ...(metadata && { metadata }) }), metadata),
              (n) => (k === 0 ? step : 1 + ((n * 7919) % 4099)),
            ).equals(fresh),
            `round ${round}, ${metadata ?? 'objects'}, step ${step}`,
          );
      }
      for (const name of ['a-000-first', 'p-001', `p-${String(1 + rnd(299)).padStart(3, '0')}`]) {
        const obj = cache.get('a', name)!;
        assert.ok(protobufGet(PODS, obj.wire, undefined, obj).equals(protobufGet(PODS, obj.wire)), name);
        assert.ok(protobufGet(PODS, obj.wire, 'v1', obj).equals(protobufGet(PODS, obj.wire, 'v1')), name);
        assert.ok(
          protobufGet(PODS, obj.wire, 'v1beta1', obj).equals(protobufGet(PODS, obj.wire, 'v1beta1')),
          name,
        );
      }
      const initial = drain(cache.watch({ ...ALL, sendInitialEvents: true }));
      const kept = initial.map((l) => protobufWatchFrame(l as Buffer, { resource: PODS }));
      const fresh = initial.map((l) => protobufWatchFrame(Buffer.concat([l as Buffer].flat())));
      assert.deepEqual(kept, fresh, `round ${round}: initial events`);
      const meta = drain(cache.watch({ ...ALL, sendInitialEvents: true, metadata: 'v1' }));
      assert.deepEqual(
        meta.map((l) => protobufWatchFrame(l as Buffer, { resource: PODS, metadata: 'v1' })),
        meta.map((l) => protobufWatchFrame(Buffer.concat([l as Buffer].flat()))),
        `round ${round}: metadata initial events`,
      );
    };
    check(0);
    for (let round = 1; round <= 16; round++) {
      // Most pods a new version (the first changes shape too): their kept messages replaced.
      // Every 8th stays, so its slab gets sparse and is compacted (a whole dead slab is not).
      for (const [i, p] of pods.entries()) {
        if (i % 8 === 7 && round > 1) continue;
        const name = p.object.metadata.name;
        cache.update(podOf(name, ++rv, name === 'a-000-first' ? (round % 2 ? 3 : 0) : shapes.get(name)!));
      }
      if (round % 4 === 0) check(round);
      else protobufList(PODS, cache.list(ALL)); // kept only
    }
  });
});
