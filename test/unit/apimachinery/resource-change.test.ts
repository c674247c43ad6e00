import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resourceChange } from '../../../src/apimachinery/resource-change.ts';
import { resourceInfo } from '../../support/resource-info.ts';

describe('resourceChange (issue 15: a CRD re-created with another scope)', () => {
  const before = resourceInfo('example.com/v1', 'things', 'Thing', { verbs: ['get', 'list', 'watch'] });
  it('nothing that matters: undefined (verbs compare as sets)', () => {
    assert.equal(
      resourceChange(
        before,
        resourceInfo('example.com/v1', 'things', 'Thing', { verbs: ['watch', 'list', 'get'] }),
      ),
      undefined,
    );
  });
  it('scope, kind and verbs are named, in that order', () => {
    const after = resourceInfo('example.com/v1', 'things', 'Gadget', {
      namespaced: false,
      verbs: ['list', 'watch'],
    });
    assert.equal(
      resourceChange(before, after),
      'scope Namespaced → Cluster, kind Thing → Gadget, verbs get,list,watch → list,watch',
    );
    assert.equal(resourceChange(after, { ...after, namespaced: true }), 'scope Cluster → Namespaced');
  });
});
