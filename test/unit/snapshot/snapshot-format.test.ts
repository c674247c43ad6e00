import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeSnapshot,
  encodeSnapshot,
  FORMAT_VERSION,
  type SnapshotFormatError,
  type SnapshotHeader,
  type SnapshotSource,
} from '../../../src/snapshot/snapshot-format.ts';

const header = (objects: number, events: number): SnapshotHeader => ({
  name: 'pods',
  scope: '',
  resource: {
    group: '',
    version: 'v1',
    resource: 'pods',
    kind: 'Pod',
    listKind: 'PodList',
    apiVersion: 'v1',
    namespaced: true,
    verbs: ['list', 'watch'],
    builtIn: true,
  },
  identity: { server: 'https://10.0.0.1:6443', kubeSystemUID: 'u-1' },
  resourceVersion: '42',
  windowStart: '30',
  takenAtMs: 1_700_000_000_000,
  objects,
  events,
});

function source(): SnapshotSource {
  const objects = [Buffer.from('{"a":1}'), Buffer.from('{"b":"x\\u00e9"}')];
  return {
    header: header(objects.length, 2),
    objects,
    events: [
      {
        type: 'MODIFIED',
        at: 1_700_000_000_001.5,
        cur: Buffer.from('{"c":2}'),
        prev: Buffer.from('{"c":1}'),
      },
      { type: 'DELETED', at: 1_700_000_000_002, cur: Buffer.from('{"d":3}'), prev: undefined },
    ],
  };
}

const file = (s: SnapshotSource = source()) => Buffer.concat([...encodeSnapshot(s)]);

function fault(bytes: Buffer): string {
  try {
    decodeSnapshot(bytes);
  } catch (err) {
    return (err as SnapshotFormatError).fault;
  }
  assert.fail('decoded');
}

describe('snapshot file format', () => {
  it('decodes what it encodes: header, objects byte for byte, events with their type, time and replaced state', () => {
    const d = decodeSnapshot(file());
    assert.deepEqual(d.header, header(2, 2));
    assert.deepEqual(d.objects.map(String), ['{"a":1}', '{"b":"x\\u00e9"}']);
    assert.deepEqual(
      d.events.map((e) => [e.type, e.at, String(e.cur), e.prev && String(e.prev)]),
      [
        ['MODIFIED', 1_700_000_000_001.5, '{"c":2}', '{"c":1}'],
        ['DELETED', 1_700_000_000_002, '{"d":3}', undefined],
      ],
    );
  });

  it('starts with the magic and the format version, ends with the SHA-256 of the rest', async () => {
    const { createHash } = await import('node:crypto');
    const f = file();
    assert.equal(f.subarray(0, 8).toString('latin1'), 'KCPSNAP\n');
    assert.equal(f.readUInt32BE(8), FORMAT_VERSION);
    assert.deepEqual(f.subarray(-32), createHash('sha256').update(f.subarray(0, -32)).digest());
  });

  it('yields chunks of about 1 MiB, so the writer yields the event loop between them', () => {
    const big = Buffer.alloc(300 * 1024, 0x61);
    const s: SnapshotSource = { header: header(10, 0), objects: Array(10).fill(big), events: [] };
    const chunks = [...encodeSnapshot(s)];
    assert.equal(chunks.length, 4); // 3 data chunks (4+4+2 objects) and the checksum
    assert.ok(chunks.slice(0, 2).every((c) => c.length >= 1 << 20 && c.length < (1 << 20) + big.length + 4));
    assert.equal(decodeSnapshot(Buffer.concat(chunks)).objects.length, 10);
  });

  it('a truncated file is refused, wherever it was cut', () => {
    const f = file();
    assert.equal(fault(f.subarray(0, 20)), 'truncated');
    for (const cut of [60, f.length - 40, f.length - 1]) assert.equal(fault(f.subarray(0, cut)), 'corrupt');
  });

  it('a flipped byte anywhere fails the checksum', () => {
    const f = file();
    for (const at of [20, 100, f.length - 50, f.length - 1]) {
      const g = Buffer.from(f);
      g[at]! ^= 1;
      assert.equal(fault(g), 'corrupt', `byte ${at}`);
    }
  });

  it('another format version is refused before anything else is read', () => {
    const f = Buffer.from(file());
    f.writeUInt32BE(FORMAT_VERSION + 1, 8);
    assert.equal(fault(f), 'version');
  });

  it('another file (wrong magic) is corrupt', () => {
    const f = Buffer.from(file());
    f.write('NOTSNAP\n', 0, 'latin1');
    assert.equal(fault(f), 'corrupt');
  });

  it('a header whose counts do not match the records is corrupt even with a valid checksum', () => {
    const s = source();
    assert.equal(fault(file({ ...s, header: { ...s.header, objects: 3 } })), 'truncated');
    assert.equal(fault(file({ ...s, header: { ...s.header, events: 1 } })), 'corrupt');
    assert.equal(fault(file({ ...s, header: { ...s.header, resourceVersion: 'x' } })), 'corrupt');
  });
});
