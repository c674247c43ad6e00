/**
 * The kept-message dictionary (spliced.ts) against the plain encoding, over every built-in kind
 * of the schema: first objects of odd shapes (tiny, over 2 KiB of own bytes, huge), the
 * dictionary filled past its 128 KiB, messages over 64 KiB, JSON at large offsets of a slab, and
 * every range a LIST body's batches may cut.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keepListItem } from '../../../../src/apimachinery/protobuf/envelope.ts';
import table from '../../../../src/apimachinery/protobuf/schema.json' with { type: 'json' };
import {
  copyKept,
  copyWholeKeptAt,
  keptLength,
  keptLengthAt,
  keptMessage,
} from '../../../../src/apimachinery/protobuf/spliced.ts';

const PARTIAL = 'apimachinery/pkg/apis/meta/v1.PartialObjectMetadata';
/** Kinds with an ObjectMeta `metadata` (reviews and options have none). */
const kinds = Object.entries((table as { kinds: Record<string, string> }).kinds).filter(([gvk, type]) => {
  if (gvk.endsWith('List')) return false;
  try {
    keepListItem(type, JSON.stringify({ metadata: { name: 'a' } }), undefined);
    return true;
  } catch {
    return false;
  }
});

let seed = 11;
const rnd = (n: number) => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return (seed >>> 8) % n;
};
const words = ['app', 'kubernetes.io/name', 'web', 'x'.repeat(70), 'q"uote', 'ünï', 'tier', '0'];
function str(n: number): string {
  let s = '';
  while (s.length < n) s += words[rnd(words.length)]! + (rnd(3) === 0 ? '-' : '');
  return s.slice(0, n);
}

/** An object of `apiVersion/kind` with metadata of `size` (0 tiny … 3 huge). */
function objectOf(gvk: string, size: number, i: number): Record<string, unknown> {
  const slash = gvk.lastIndexOf('/');
  const labels: Record<string, string> = {};
  const annotations: Record<string, string> = {};
  const n = [0, 3, 40, 400][size]!;
  for (let k = 0; k < n; k++) labels[`l${k}-${str(8)}`] = str(rnd(60));
  for (let k = 0; k < n / 4; k++) annotations[`a${k}`] = str(rnd(3) === 0 ? 300 : 20);
  if (size === 3) annotations.big = str(70_000);
  return {
    apiVersion: gvk.slice(0, slash),
    kind: gvk.slice(slash + 1),
    metadata: {
      name: size === 0 ? 'a' : `obj-${i}-${str(rnd(40))}`,
      ...(size > 0 && {
        namespace: 'ns',
        uid: '0b8f3a54-8a3d-4c5e-9d1f-2f1a3b4c5d6e',
        resourceVersion: `${i}`,
      }),
      ...(n > 0 && { labels, annotations }),
      ...(size > 1 && {
        managedFields: [
          {
            manager: 'kubectl',
            operation: 'Update',
            apiVersion: 'v1',
            time: '2026-12-06T20:00:00Z',
            fieldsType: 'FieldsV1',
            fieldsV1: {
              'f:metadata': {
                'f:labels': Object.fromEntries(Object.keys(labels).map((l) => [`f:${l}`, {}])),
              },
            },
          },
        ],
      }),
    },
  };
}

/** Slabs reused (their other bytes: filler a misread would copy). */
const SLAB = Buffer.alloc(300_000);
const JSLAB = Buffer.alloc(3_200_000, 0xcd);

function check(type: string, obj: Record<string, unknown>, pick?: (o: unknown) => unknown): number {
  const text = JSON.stringify(obj);
  const { kind: _k, apiVersion: _a, ...rest } = obj;
  const item = Buffer.from(JSON.stringify(rest));
  const plainKept = keepListItem(type, text, undefined, pick);
  const plain = Buffer.from(plainKept.subarray(0, plainKept.length - 4));
  const kept = Buffer.from(keepListItem(type, text, item, pick));
  const label = `${type} ${text.length}`;
  assert.deepEqual(keptMessage(kept, item), plain, label);
  const n = keptLength(kept);
  assert.equal(n, plain.length, label);
  // In slabs: the kept bytes and the JSON at odd offsets of bigger buffers.
  const ka = 1 + rnd(200_000);
  const ja = 1 + rnd(3_000_000);
  const slab =
    ka + kept.length + 7 <= SLAB.length ? SLAB.fill(0xab) : Buffer.alloc(ka + kept.length + 7, 0xab);
  kept.copy(slab, ka);
  const jslab = ja + item.length + 5 <= JSLAB.length ? JSLAB : Buffer.alloc(ja + item.length + 5, 0xcd);
  jslab.fill(0xcd, ja - 1, ja);
  item.copy(jslab, ja);
  assert.equal(keptLengthAt(slab, ka, ka + kept.length), n, label);
  const whole = Buffer.alloc(n + 2);
  assert.equal(copyWholeKeptAt(slab, ka, ka + kept.length, jslab, whole, 1, ja), n + 1);
  assert.deepEqual(whole.subarray(1, n + 1), plain, label);
  // Batches: cut at every `step` bytes, as a LIST body's fill is.
  for (const step of [1 + rnd(30), 64 + rnd(500), 4096]) {
    if (n / step > 20_000) continue;
    const out = Buffer.alloc(n);
    let at = 0;
    for (let from = 0; from < n; from += step) {
      const to = Math.min(n, from + step);
      at = copyKept(slab.subarray(ka, ka + kept.length), jslab, from, to, out, at, ja);
      assert.equal(at, to, `${label} [${from}, ${to})`);
    }
    assert.deepEqual(out, plain, `${label} step ${step}`);
  }
  return kept.length;
}

describe('kept-message dictionary against the plain encoding', () => {
  it('every built-in kind, odd first objects, the dictionary filled past its end, PartialObjectMetadata', () => {
    let objects = 0;
    for (let round = 0; round < 3; round++)
      for (const [gvk, type] of kinds) {
        for (let i = 0; i < 4; i++) {
          // The first of a type: a random size (tiny, small, over 2 KiB, huge); then the others.
          const size = round === 0 && i === 0 ? rnd(4) : rnd(3);
          const obj = objectOf(gvk, size, i);
          check(type, obj);
          check(PARTIAL, obj, (o) => ({ metadata: (o as { metadata?: unknown }).metadata }));
          objects += 2;
        }
      }
    assert.ok(objects > 2000 && kinds.length > 150, `${objects} objects, ${kinds.length} kinds`);
  });
});
