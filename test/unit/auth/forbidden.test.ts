/**
 * The denial wording of `responsewriters.ForbiddenStatusError` (expected strings copied from
 * kube-apiserver v1.37.2 answers: `kubectl get configmaps -n kube-system --as …`).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forbidden, forbiddenMessage, proxyForbidden, unauthorized } from '../../../src/auth/forbidden.ts';

describe('forbidden', () => {
  it('namespaced list, core group', () => {
    const e = forbidden(
      'system:serviceaccount:kcp-system:none',
      { namespace: 'kube-system', verb: 'list', group: '', version: 'v1', resource: 'configmaps' },
      '',
    );
    assert.equal(e.code, 403);
    assert.deepEqual(e.status, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'configmaps is forbidden: User "system:serviceaccount:kcp-system:none" cannot list resource "configmaps" in API group "" in the namespace "kube-system"',
      reason: 'Forbidden',
      details: { kind: 'configmaps' },
      code: 403,
    });
  });

  it('cluster scope with a group, a name and the authorizer reason after ": "', () => {
    const e = forbidden(
      'system:node:n1',
      { verb: 'get', group: 'apps', version: 'v1', resource: 'deployments', name: 'd1' },
      'can only list/watch pods with spec.nodeName field selector',
    );
    assert.equal(
      e.status.message,
      'deployments.apps "d1" is forbidden: User "system:node:n1" cannot get resource "deployments" in API group "apps" at the cluster scope: can only list/watch pods with spec.nodeName field selector',
    );
    assert.deepEqual(e.status.details, { name: 'd1', group: 'apps', kind: 'deployments' });
  });

  it('HTML-escapes & < > in the message (not in the reason)', () => {
    const a = { verb: 'list', group: '', version: 'v1', resource: 'pods', namespace: 'a' };
    assert.equal(
      forbidden('<b>&', a, 'x < y').status.message,
      'pods is forbidden: User "&lt;b&gt;&amp;" cannot list resource "pods" in API group "" in the namespace "a": x < y',
    );
  });

  it('subresources are named resource/subresource', () => {
    assert.match(
      forbiddenMessage('u', { verb: 'get', group: '', version: 'v1', resource: 'pods', subresource: 'log' }),
      /resource "pods\/log"/,
    );
  });

  it('401 and the proxy-level 403', () => {
    assert.deepEqual(unauthorized().status, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    });
    assert.equal(proxyForbidden('nope').status.message, 'forbidden: nope');
    assert.equal(proxyForbidden('nope').code, 403);
  });
});
