import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodedPath, RequestFilter } from '../../../src/auth/request-filter.ts';
import {
  KUBECTL_PROXY_ACCEPT_PATHS,
  KUBECTL_PROXY_REJECT_METHODS,
  KUBECTL_PROXY_REJECT_PATHS,
} from '../../../src/config/kubectl-proxy-filter.ts';

const kubectlDefaults = new RequestFilter({
  acceptPaths: KUBECTL_PROXY_ACCEPT_PATHS,
  rejectPaths: KUBECTL_PROXY_REJECT_PATHS,
  rejectMethods: KUBECTL_PROXY_REJECT_METHODS,
});

describe('the path and method filter (kubectl proxy FilterServer.accept)', () => {
  it('kubectl proxy defaults: exec and attach of pods refused, port-forward, logs and reads accepted', () => {
    for (const [method, url] of [
      ['POST', '/api/v1/namespaces/a/pods/p/exec?command=true&stdout=true'],
      ['GET', '/api/v1/namespaces/a/pods/p/exec?command=true'],
      ['POST', '/api/v1/namespaces/a/pods/p/attach?container=c'],
    ] as const) {
      const r = kubectlDefaults.check(method, url);
      assert.equal(r?.rule, 'reject-paths', url);
      assert.equal(r.status.code, 403);
      assert.equal(r.status.status.reason, 'Forbidden');
    }
    for (const url of [
      '/api/v1/namespaces/a/pods/p/portforward?ports=80',
      '/api/v1/namespaces/a/pods/p/log',
      '/api/v1/namespaces/a/pods',
      '/api/v1/namespaces/exec/configmaps/attach',
      '/apis/apps/v1/deployments',
      '/version',
      '/',
    ])
      assert.equal(kubectlDefaults.check('GET', url), undefined, url);
    for (const m of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'])
      assert.equal(kubectlDefaults.check(m, '/api/v1/pods'), undefined, m);
  });

  it('the 403 names the method, the decoded path and the flag', () => {
    const r = kubectlDefaults.check('POST', '/api/v1/namespaces/a/pods/p/exec?command=true');
    assert.deepEqual(r?.status.status, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'forbidden: kube-cache-proxy refuses POST "/api/v1/namespaces/a/pods/p/exec": the path matches --reject-paths "^/api/.*/pods/.*/exec"',
      reason: 'Forbidden',
      details: {},
      code: 403,
    });
  });

  it('matches the decoded path, as Go req.URL.Path: an escaped exec is still exec', () => {
    assert.equal(decodedPath('/api/v1/namespaces/a/pods/p/ex%65c?x=%41'), '/api/v1/namespaces/a/pods/p/exec');
    assert.equal(decodedPath('/api/v1/namespaces/a/pods%2Fp%2Fexec'), '/api/v1/namespaces/a/pods/p/exec');
    assert.equal(decodedPath('/api/v1/namespaces/%C3%A9'), '/api/v1/namespaces/é');
    assert.equal(decodedPath('/a%FFb'), '/a\uFFFDb');
    // Escapes that do not parse: Go's server answers 400 before any handler; kept as is.
    assert.equal(decodedPath('/a%zzb%4'), '/a%zzb%4');
    assert.equal(kubectlDefaults.check('POST', '/api/v1/namespaces/a/pods/p/ex%65c')?.rule, 'reject-paths');
    assert.equal(kubectlDefaults.check('POST', '/api/v1/namespaces/a/pods/p/%61ttach')?.rule, 'reject-paths');
  });

  it('reject-paths first, then reject-methods, then accept-paths (kubectl order)', () => {
    const f = new RequestFilter({
      acceptPaths: ['^/api/', '^/apis/'],
      rejectPaths: ['/secrets'],
      rejectMethods: ['POST', 'PUT', 'PATCH', 'DELETE'],
    });
    assert.equal(f.check('POST', '/api/v1/namespaces/a/secrets')?.rule, 'reject-paths');
    assert.equal(f.check('DELETE', '/api/v1/namespaces/a/configmaps/c')?.rule, 'reject-methods');
    assert.equal(f.check('GET', '/version')?.rule, 'accept-paths');
    assert.equal(f.check('GET', '/apis/apps/v1/deployments'), undefined);
    assert.match(
      f.check('DELETE', '/api/v1/namespaces/a/configmaps/c')!.status.message,
      /: the method matches --reject-methods "DELETE"$/,
    );
    assert.match(
      f.check('GET', '/version')!.status.message,
      /: the path matches none of --accept-paths "\^\/api\/,\^\/apis\/"$/,
    );
  });

  it('unanchored patterns match anywhere, as Go MatchString', () => {
    const f = new RequestFilter({ acceptPaths: ['^.*'], rejectPaths: ['portforward'], rejectMethods: [] });
    assert.equal(f.check('GET', '/api/v1/namespaces/a/pods/p/portforward')?.rule, 'reject-paths');
  });

  it('empty lists: nothing rejected, and nothing accepted without an accept path (kubectl)', () => {
    const none = new RequestFilter({ acceptPaths: ['^.*'], rejectPaths: [], rejectMethods: [] });
    assert.equal(none.check('POST', '/api/v1/namespaces/a/pods/p/exec'), undefined);
    const closed = new RequestFilter({ acceptPaths: [], rejectPaths: [], rejectMethods: [] });
    assert.equal(closed.check('GET', '/api/v1/pods')?.rule, 'accept-paths');
  });
});
