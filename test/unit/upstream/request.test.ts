import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readLines } from '../../../src/upstream/request.ts';

async function collect(chunks: string[]): Promise<string[]> {
  async function* src() {
    for (const c of chunks) yield Buffer.from(c);
  }
  const out: string[] = [];
  for await (const l of readLines(src())) out.push(l.toString());
  return out;
}

describe('readLines', () => {
  it('splits lines across arbitrary chunk boundaries without losing bytes', async () => {
    assert.deepEqual(await collect(['{"a":1}\n{"b"', ':2}\n\n{"c":', '3', '}\n{"d":4}']), [
      '{"a":1}',
      '{"b":2}',
      '{"c":3}',
      '{"d":4}',
    ]);
    assert.deepEqual(await collect(['ü\n', 'x']), ['ü', 'x']);
  });
});
