import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  fieldSelectorRequirements,
  labelSelectorRequirements,
  readAttributes,
} from '../../../src/auth/request-attributes.ts';

const q = (s: string) => new URLSearchParams(s);

describe('fieldSelectorToAuthorizationAPI', () => {
  it('= and == are In, != is NotIn, one value each, sorted like fields.ParseSelector', () => {
    assert.deepEqual(
      fieldSelectorRequirements('spec.nodeName=n1,metadata.namespace!=a,status.phase==Running'),
      [
        { key: 'metadata.namespace', operator: 'NotIn', values: ['a'] },
        { key: 'spec.nodeName', operator: 'In', values: ['n1'] },
        { key: 'status.phase', operator: 'In', values: ['Running'] },
      ],
    );
  });
  it('unparsable or empty: none', () => {
    assert.equal(fieldSelectorRequirements('nonsense'), undefined);
    assert.equal(fieldSelectorRequirements(''), undefined);
  });
});

describe('labelSelectorToAuthorizationAPI', () => {
  it('maps every operator the API has, drops gt/lt', () => {
    assert.deepEqual(labelSelectorRequirements('a=1,b!=2,c in (y,x),d notin (z),e,!f,g>3'), [
      { key: 'a', operator: 'In', values: ['1'] },
      { key: 'b', operator: 'NotIn', values: ['2'] },
      { key: 'c', operator: 'In', values: ['x', 'y'] },
      { key: 'd', operator: 'NotIn', values: ['z'] },
      { key: 'e', operator: 'Exists' },
      { key: 'f', operator: 'DoesNotExist' },
    ]);
  });
  it('only gt/lt, or unparsable: none', () => {
    assert.equal(labelSelectorRequirements('g>3'), undefined);
    assert.equal(labelSelectorRequirements('a in ('), undefined);
  });
});

describe('readAttributes', () => {
  const pods = { group: '', version: 'v1', resource: 'pods' };
  it('list and watch carry the selectors', () => {
    assert.deepEqual(
      readAttributes('list', pods, q('fieldSelector=spec.nodeName%3Dn1&labelSelector=app%3Dx')),
      {
        verb: 'list',
        group: '',
        version: 'v1',
        resource: 'pods',
        fieldSelector: { requirements: [{ key: 'spec.nodeName', operator: 'In', values: ['n1'] }] },
        labelSelector: { requirements: [{ key: 'app', operator: 'In', values: ['x'] }] },
      },
    );
    assert.equal(
      readAttributes('watch', pods, q('fieldSelector=spec.nodeName%3Dn1')).fieldSelector?.requirements.length,
      1,
    );
  });
  it('get never carries selectors', () => {
    assert.deepEqual(
      readAttributes('get', { ...pods, namespace: 'a', name: 'p' }, q('fieldSelector=spec.nodeName%3Dn1')),
      {
        namespace: 'a',
        verb: 'get',
        group: '',
        version: 'v1',
        resource: 'pods',
        name: 'p',
      },
    );
  });
  it('a metadata.name field selector names the object of a list (requestinfo.go)', () => {
    assert.equal(
      readAttributes('list', { ...pods, namespace: 'a' }, q('fieldSelector=metadata.name%3Dp1')).name,
      'p1',
    );
    assert.equal(readAttributes('list', pods, q('fieldSelector=metadata.name%3D..')).name, undefined);
    assert.equal(readAttributes('list', pods, q('fieldSelector=metadata.name!%3Dp1')).name, undefined);
  });
  it('list options that do not decode name nothing (requestinfo.go resets them; issue 29)', () => {
    const ns = { ...pods, namespace: 'a' };
    for (const bad of ['limit=abc', 'limit=', 'timeoutSeconds=1.5', 'labelSelector=a%20in%20(']) {
      const a = readAttributes('list', ns, q(`${bad}&fieldSelector=metadata.name%3Dp1`));
      assert.equal(a.name, undefined, bad);
      assert.deepEqual(a.fieldSelector, {
        requirements: [{ key: 'metadata.name', operator: 'In', values: ['p1'] }],
      });
    }
    assert.equal(readAttributes('watch', ns, q('limit=5&fieldSelector=metadata.name%3Dp1')).name, 'p1');
    assert.equal(
      readAttributes('list', ns, q('labelSelector=g%3E3&fieldSelector=metadata.name%3Dp1')).name,
      'p1',
    );
  });
  it('a named namespace is reviewed inside itself (the namespaces special case; issue 29)', () => {
    const nsr = { group: '', version: 'v1', resource: 'namespaces' };
    assert.deepEqual(readAttributes('get', { ...nsr, name: 'team-a' }, q('')), {
      namespace: 'team-a',
      verb: 'get',
      group: '',
      version: 'v1',
      resource: 'namespaces',
      name: 'team-a',
    });
    // A list stays at the cluster scope, even when a field selector names one namespace.
    const l = readAttributes('list', nsr, q('fieldSelector=metadata.name%3Dteam-a'));
    assert.equal(l.namespace, undefined);
    assert.equal(l.name, 'team-a');
    // Any group's `namespaces`, as requestinfo.go looks at the path only.
    assert.equal(
      readAttributes('get', { group: 'x.io', version: 'v1', resource: 'namespaces', name: 'n' }, q(''))
        .namespace,
      'n',
    );
  });
});
