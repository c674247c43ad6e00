import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allowedSeconds, differences, median, rows } from '../../conformance/compare.ts';
import type { SpecResult } from '../../conformance/junit.ts';

const spec = (name: string, state: string, seconds: number, message = ''): SpecResult => ({
  name,
  state,
  seconds,
  message,
  filtered: false,
});

describe('direct against proxied', () => {
  it('median of odd and even counts, 0 for none', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 2, 3]), 2.5);
    assert.equal(median([]), 0);
  });

  it('allows max(2 × direct, direct + 10 s)', () => {
    assert.equal(allowedSeconds(3), 13);
    assert.equal(allowedSeconds(10), 20);
    assert.equal(allowedSeconds(30), 60);
  });

  it('rows: one per spec, sorted, a cell per mode with the median over repeats', () => {
    const r = rows({
      direct: [
        [spec('b', 'passed', 2), spec('a', 'passed', 1)],
        [spec('b', 'passed', 4)],
        [spec('b', 'passed', 9)],
      ],
      sidecar: [[spec('b', 'failed', 5, 'boom')]],
    });
    assert.deepEqual(
      r.map((x) => x.name),
      ['a', 'b'],
    );
    assert.deepEqual(r[1]!.cells.direct, { states: ['passed', 'passed', 'passed'], seconds: 4, message: '' });
    assert.deepEqual(r[1]!.cells.sidecar, { states: ['failed'], seconds: 5, message: 'boom' });
    assert.equal(r[0]!.cells.sidecar, undefined);
  });

  it('differences: a result lost through the proxy, a time over the allowance; nothing for specs failing direct', () => {
    const d = differences(
      rows({
        direct: [
          [
            spec('ok', 'passed', 5),
            spec('lost', 'passed', 5),
            spec('slow', 'passed', 5),
            spec('bad', 'failed', 1),
          ],
        ],
        sidecar: [
          [
            spec('ok', 'passed', 15),
            spec('lost', 'failed', 5),
            spec('slow', 'passed', 15.1),
            spec('bad', 'failed', 1),
          ],
        ],
      }),
    );
    assert.deepEqual(
      d.map((x) => [x.name, x.mode, x.kind, x.allowed]),
      [
        ['lost', 'sidecar', 'result', 15],
        ['slow', 'sidecar', 'time', 15],
      ],
    );
  });
});
