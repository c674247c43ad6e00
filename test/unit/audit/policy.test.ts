import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadPolicy, PolicyError } from '../../../src/audit/policy.ts';

const fails = (text: string, message: string | RegExp) =>
  assert.throws(
    () => loadPolicy(text),
    (e: unknown) =>
      e instanceof PolicyError &&
      (typeof message === 'string' ? e.message === message : message.test(e.message)),
  );

describe('audit policy file (reader.go, validation.go)', () => {
  it('loads the apiserver format: every field of a rule, the policy-level stages and managed fields', () => {
    const { policy, warnings } = loadPolicy(`
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: RequestResponse
  users: [alice]
  userGroups: [system:masters]
  verbs: [get, list]
  resources:
  - group: ""
    resources: [pods, pods/log, "*/status"]
    resourceNames: [p1]
  namespaces: [default, ""]
  omitStages: [ResponseStarted]
  omitManagedFields: false
- level: Metadata
  nonResourceURLs: ["/healthz*", "/version"]
- level: None
`);
    assert.deepEqual(warnings, []);
    assert.deepEqual(policy, {
      omitStages: ['RequestReceived'],
      omitManagedFields: true,
      rules: [
        {
          level: 'RequestResponse',
          users: ['alice'],
          userGroups: ['system:masters'],
          verbs: ['get', 'list'],
          resources: [{ group: '', resources: ['pods', 'pods/log', '*/status'], resourceNames: ['p1'] }],
          namespaces: ['default', ''],
          nonResourceURLs: [],
          omitStages: ['ResponseStarted'],
          omitManagedFields: false,
        },
        {
          level: 'Metadata',
          users: [],
          userGroups: [],
          verbs: [],
          resources: [],
          namespaces: [],
          nonResourceURLs: ['/healthz*', '/version'],
          omitStages: [],
        },
        {
          level: 'None',
          users: [],
          userGroups: [],
          verbs: [],
          resources: [],
          namespaces: [],
          nonResourceURLs: [],
          omitStages: [],
        },
      ],
    });
  });

  it('JSON is YAML too', () => {
    const { policy } = loadPolicy(
      '{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"Metadata"}]}',
    );
    assert.equal(policy.rules[0]!.level, 'Metadata');
  });

  it('an unknown or duplicate field is a warning and ignored (strict decoding falls back to lenient)', () => {
    const { policy, warnings } = loadPolicy(`
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resource: [pods]
  level: Request
`);
    assert.deepEqual(warnings, ['duplicate field "level"', 'unknown field "rules[0].resource"']);
    assert.equal(policy.rules[0]!.level, 'Request');
  });

  it('refuses what the apiserver refuses, in its words', () => {
    fails('apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n', 'loaded illegal policy with 0 rules');
    fails(
      'apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n',
      /^unknown group version field audit.k8s.io\/v1beta1/,
    );
    fails(
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]\n',
      'rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse"',
    );
    fails(
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{verbs: [get]}]\n',
      'rules[0].level: Required value',
    );
    fails(
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Done]\nrules: [{level: None}]\n',
      'omitStages[0]: Invalid value: "Done": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic',
    );
    fails(
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: ["/a*b", "x"]}]\n',
      `[rules[0].nonResourceURLs[0]: Invalid value: "/a*b": non-resource URL wildcards '*' must be the final character of the rule, rules[0].nonResourceURLs[1]: Invalid value: "x": non-resource URL rules must begin with a '/' character]`,
    );
    fails(
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: ["/x"], namespaces: [a]}]\n',
      'rules[0].nonResourceURLs: Invalid value: []string{"/x"}: rules cannot apply to both regular resources and non-resource URLs',
    );
    fails(
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{group: "", resourceNames: [a]}]}]\n',
      'rules[0].resources.resourceNames: Invalid value: []string{"a"}: using resourceNames requires at least one resource',
    );
    fails(
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, verbs: get}]\n',
      /^failed lenient decoding: rules\[0\]\.verbs: expected array/,
    );
    fails('rules: [', /^failed decoding: /);
  });
});
