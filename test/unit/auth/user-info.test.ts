import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isServiceAccountUsername,
  nodeName,
  withAuthenticated,
  x509User,
} from '../../../src/auth/user-info.ts';

describe('x509User (CommonNameUserConversion + authenticated-group adder)', () => {
  it('CN is the user, every O a group, plus system:authenticated', () => {
    assert.deepEqual(x509User({ subject: { CN: 'system:node:n1', O: 'system:nodes' } as never }), {
      username: 'system:node:n1',
      uid: '',
      groups: ['system:nodes', 'system:authenticated'],
      extra: {},
    });
    assert.deepEqual(x509User({ subject: { CN: 'alice', O: ['a', 'b'] } as never })?.groups, [
      'a',
      'b',
      'system:authenticated',
    ]);
    assert.deepEqual(x509User({ subject: { CN: 'bob' } as never })?.groups, ['system:authenticated']);
  });

  it('a certificate without CN authenticates no one', () => {
    assert.equal(x509User({ subject: { O: 'x' } as never }), undefined);
  });

  it('does not add system:authenticated twice', () => {
    assert.deepEqual(withAuthenticated(['system:authenticated', 'g']), ['system:authenticated', 'g']);
  });
});

describe('username kinds', () => {
  it('node and service account usernames', () => {
    assert.equal(nodeName('system:node:n1'), 'n1');
    assert.equal(nodeName('system:nodes'), undefined);
    assert.equal(isServiceAccountUsername('system:serviceaccount:ns:sa'), true);
    assert.equal(isServiceAccountUsername('system:serviceaccount:ns'), false);
  });
});
