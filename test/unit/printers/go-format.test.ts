/**
 * The Go helpers the printers call: `labels.FormatLabels`, `metav1.FormatLabelSelector`
 * (requirements sorted by key, values sorted, `<none>` for nil and empty), `listWithMoreString`,
 * Go's byte order, `strings.TrimSpace`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { goTrimSpace } from '../../../src/printers/core-event.ts';
import {
  formatLabelSelector,
  formatLabels,
  goSorted,
  labelSelectorString,
  listWithMore,
} from '../../../src/printers/go-format.ts';

describe('printers Go helpers', () => {
  it('formatLabels: sorted k=v, <none> when empty', () => {
    assert.equal(formatLabels({ b: '2', a: '1' }), 'a=1,b=2');
    assert.equal(formatLabels({}), '<none>');
    assert.equal(formatLabels(undefined), '<none>');
  });
  it('formatLabelSelector: matchLabels and expressions sorted by key, values sorted', () => {
    assert.equal(
      formatLabelSelector({
        matchLabels: { z: '1', app: 'web' },
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['b', 'a'] },
          { key: 'env', operator: 'NotIn', values: ['prod'] },
          { key: 'canary', operator: 'DoesNotExist' },
          { key: 'beta', operator: 'Exists' },
        ],
      }),
      'app=web,beta,!canary,env notin (prod),tier in (a,b),z=1',
    );
    assert.equal(formatLabelSelector(undefined), '<none>');
    assert.equal(formatLabelSelector({}), '<none>');
    assert.equal(formatLabelSelector({ matchExpressions: [{ key: 'a', operator: 'Bad' }] }), '<error>');
    assert.equal(labelSelectorString(undefined), '');
  });
  it('listWithMoreString', () => {
    assert.equal(listWithMore([], false, 0, 3), '<unset>');
    assert.equal(listWithMore(['a', 'b', 'c'], true, 5, 3), 'a,b,c + 2 more...');
  });
  it("Go's byte order (UTF-8), not UTF-16", () => {
    // UTF-16 puts U+1F600 (D83D DE00) first; UTF-8 puts U+FF61 (EF BD A1) before it (F0 9F 98 80).
    assert.deepEqual(goSorted(['\u{1F600}', '\uFF61']), ['\uFF61', '\u{1F600}']);
  });
  it('strings.TrimSpace keeps U+FEFF, trims U+0085', () => {
    assert.equal(goTrimSpace('\u0085 a b\t\n'), 'a b');
    assert.equal(goTrimSpace('\uFEFFa'), '\uFEFFa');
  });
});
