import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { handOver } from '../../../src/on-demand/handover.ts';

const flush = () => new Promise((r) => setImmediate(r));

describe('handOver: passed-through watches end once the cache proved the gap to their clients', () => {
  it('one proof from the oldest known position; unknown positions end at once, the rest after the proof', async () => {
    const ended: string[] = [];
    const asked: bigint[] = [];
    let settle!: (ok: boolean) => void;
    handOver(
      [
        { handover: () => ended.push('a'), position: () => 30n },
        { handover: () => ended.push('b'), position: () => 21n },
        { handover: () => ended.push('c'), position: () => undefined },
      ],
      (rv) => {
        asked.push(rv);
        return new Promise((r) => {
          settle = r;
        });
      },
    );
    assert.deepEqual(asked, [21n]);
    await flush();
    assert.deepEqual(ended, ['c']);
    settle(true);
    await flush();
    assert.deepEqual(ended, ['c', 'a', 'b']);
  });

  it('a rejected proof still ends them; without a prover every watch ends at once', async () => {
    const ended: string[] = [];
    handOver([{ handover: () => ended.push('a'), position: () => 5n }], () => Promise.reject(new Error('x')));
    await flush();
    assert.deepEqual(ended, ['a']);
    handOver([{ handover: () => ended.push('b'), position: () => 5n }], undefined);
    assert.deepEqual(ended, ['a', 'b']);
  });
});
