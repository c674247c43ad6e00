import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  boundCode,
  boundVerb,
  ResourceLabelBounds,
  subresourceLabel,
} from '../../../src/ops/metric-labels.ts';

describe('issue 11 item 13: bounded label values', () => {
  it('verbs outside the apiserver set are `other`; codes are 100–599 or <error>', () => {
    assert.deepEqual(['LIST', 'WATCH', 'DELETECOLLECTION', 'HEAD', 'PROPFIND', 'x'].map(boundVerb), [
      'LIST',
      'WATCH',
      'DELETECOLLECTION',
      'HEAD',
      'other',
      'other',
    ]);
    assert.deepEqual([200, '404', 499, '<error>', 999, 42].map(boundCode), [
      '200',
      '404',
      '499',
      '<error>',
      'other',
      'other',
    ]);
  });

  it('a subresource keeps its first segment (RequestInfo.Subresource)', () => {
    assert.equal(subresourceLabel(undefined), '');
    assert.equal(subresourceLabel('status'), 'status');
    assert.equal(subresourceLabel('proxy/a/b/c'), 'proxy');
  });

  it('keeps the first N well-formed label sets; later and malformed ones are `other`', () => {
    const b = new ResourceLabelBounds(2);
    const l = (resource: string, subresource = '') => ({ group: '', version: 'v1', resource, subresource });
    const other = { group: 'other', version: 'other', resource: 'other', subresource: '' };
    assert.deepEqual(b.bound(l('pods')), l('pods'));
    assert.deepEqual(b.bound(l('Bad_Name')), other);
    assert.deepEqual(b.bound(l('pods', 'log')), l('pods', 'log'));
    assert.deepEqual(b.bound(l('secrets')), other);
    assert.deepEqual(b.bound(l('secrets', 'x')), { ...other, subresource: 'other' });
    // Already seen: kept; non-resource paths (all "") are always kept.
    assert.deepEqual(b.bound(l('pods')), l('pods'));
    const none = { group: '', version: '', resource: '', subresource: '' };
    assert.deepEqual(b.bound(none), none);
  });
});
