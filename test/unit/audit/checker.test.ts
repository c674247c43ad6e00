import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AuditAttributes, PolicyRuleEvaluator, pathMatches } from '../../../src/audit/checker.ts';
import { loadPolicy } from '../../../src/audit/policy.ts';

const alice = { username: 'alice', uid: 'u1', groups: ['devs', 'system:authenticated'], extra: {} };
const res = (over: Partial<AuditAttributes>): AuditAttributes => ({
  user: alice,
  verb: 'get',
  resourceRequest: true,
  path: '/api/v1/namespaces/default/pods/p1',
  namespace: 'default',
  apiGroup: '',
  apiVersion: 'v1',
  resource: 'pods',
  name: 'p1',
  ...over,
});
const evaluator = (rules: string, extra = '') =>
  new PolicyRuleEvaluator(
    loadPolicy(`apiVersion: audit.k8s.io/v1\nkind: Policy\n${extra}rules:\n${rules}`).policy,
  );
const level = (rules: string, a: AuditAttributes) => evaluator(rules).evaluate(a).level;

describe('audit policy rules (checker.go)', () => {
  it('first matching rule wins; no match is None', () => {
    const rules =
      '- level: Request\n  verbs: [list]\n- level: Metadata\n  verbs: [get]\n- level: RequestResponse\n';
    assert.equal(level(rules, res({ verb: 'get' })), 'Metadata');
    assert.equal(level(rules, res({ verb: 'list' })), 'Request');
    assert.equal(level(rules, res({ verb: 'watch' })), 'RequestResponse');
    assert.equal(level('- level: Metadata\n  verbs: [list]\n', res({})), 'None');
  });

  it('users and userGroups need a user; any of the groups matches', () => {
    assert.equal(level('- level: Metadata\n  users: [alice]\n', res({})), 'Metadata');
    assert.equal(level('- level: Metadata\n  users: [bob]\n', res({})), 'None');
    assert.equal(level('- level: Metadata\n  userGroups: [devs]\n', res({})), 'Metadata');
    assert.equal(level('- level: Metadata\n  userGroups: [ops]\n', res({})), 'None');
    assert.equal(level('- level: Metadata\n  userGroups: [devs]\n', res({ user: undefined })), 'None');
  });

  it('resources: group, resource, resourceNames, subresources and the * forms; namespaces ("" cluster-scoped)', () => {
    const pods = '- level: Metadata\n  resources: [{group: "", resources: [pods]}]\n';
    assert.equal(level(pods, res({})), 'Metadata');
    assert.equal(level(pods, res({ apiGroup: 'apps', resource: 'pods' })), 'None', 'another group');
    assert.equal(level(pods, res({ subresource: 'log' })), 'None', 'pods does not match pods/log');
    const log = '- level: Metadata\n  resources: [{group: "", resources: [pods/log]}]\n';
    assert.equal(level(log, res({ subresource: 'log' })), 'Metadata');
    assert.equal(level(log, res({})), 'None');
    const anyStatus = '- level: Metadata\n  resources: [{group: "", resources: ["*/status"]}]\n';
    assert.equal(level(anyStatus, res({ subresource: 'status' })), 'Metadata');
    assert.equal(level(anyStatus, res({})), 'None');
    const podsAll = '- level: Metadata\n  resources: [{group: "", resources: ["pods/*"]}]\n';
    assert.equal(level(podsAll, res({ subresource: 'exec' })), 'Metadata');
    // checker.go checks no subresource for the "resource/*" form: pods itself matches too.
    assert.equal(level(podsAll, res({})), 'Metadata');
    assert.equal(level(podsAll, res({ resource: 'configmaps' })), 'None');
    const star = '- level: Metadata\n  resources: [{group: "", resources: ["*"]}]\n';
    assert.equal(level(star, res({ subresource: 'log' })), 'Metadata');
    assert.equal(
      level('- level: Metadata\n  resources: [{group: "*"}]\n', res({ apiGroup: 'apps' })),
      'Metadata',
    );
    assert.equal(
      level('- level: Metadata\n  resources: [{group: apps}]\n', res({ apiGroup: 'apps' })),
      'Metadata',
    );
    const named = '- level: Metadata\n  resources: [{group: "", resources: [pods], resourceNames: [p1]}]\n';
    assert.equal(level(named, res({})), 'Metadata');
    assert.equal(level(named, res({ name: 'p2' })), 'None');
    assert.equal(level(named, res({ name: undefined, verb: 'list' })), 'None', 'a list names no object');
    assert.equal(level('- level: Metadata\n  namespaces: [default]\n', res({})), 'Metadata');
    assert.equal(level('- level: Metadata\n  namespaces: [kube-system]\n', res({})), 'None');
    assert.equal(
      level('- level: Metadata\n  namespaces: [""]\n', res({ namespace: undefined, resource: 'nodes' })),
      'Metadata',
    );
    assert.equal(
      level(
        '- level: Metadata\n  namespaces: [default]\n',
        res({ resourceRequest: false, path: '/version' }),
      ),
      'None',
      'a namespace rule never matches a non-resource request',
    );
  });

  it('nonResourceURLs: exact, *, trailing * prefix; never a resource request', () => {
    const r = '- level: Metadata\n  nonResourceURLs: ["/healthz*", "/version"]\n';
    const nr = (path: string) => res({ resourceRequest: false, path, verb: 'get' });
    assert.equal(level(r, nr('/version')), 'Metadata');
    assert.equal(level(r, nr('/version/x')), 'None');
    assert.equal(level(r, nr('/healthz/etcd')), 'Metadata');
    assert.equal(level(r, res({})), 'None');
    assert.equal(pathMatches('/anything', '*'), true);
    assert.equal(pathMatches('/apis', '/api*'), true);
    assert.equal(pathMatches('/ap', '/api**'), false);
  });

  it('omitStages joins the policy and the rule; omitManagedFields: the rule over the policy', () => {
    const e = evaluator(
      '- level: Metadata\n  verbs: [get]\n  omitStages: [ResponseStarted]\n  omitManagedFields: false\n- level: Request\n',
      'omitStages: [RequestReceived]\nomitManagedFields: true\n',
    );
    const get = e.evaluate(res({}));
    assert.deepEqual([...get.omitStages].sort(), ['RequestReceived', 'ResponseStarted']);
    assert.equal(get.omitManagedFields, false);
    const list = e.evaluate(res({ verb: 'list' }));
    assert.deepEqual(list.omitStages, ['RequestReceived']);
    assert.equal(list.omitManagedFields, true);
    const none = evaluator('- level: Metadata\n  verbs: [get]\n', 'omitStages: [Panic]\n').evaluate(
      res({ verb: 'list' }),
    );
    assert.deepEqual(none, { level: 'None', omitStages: ['Panic'], omitManagedFields: false });
  });
});
