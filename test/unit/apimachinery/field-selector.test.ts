import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseFieldSelector } from '../../../src/apimachinery/field-selector.ts';
import { selectableFields } from '../../../src/apimachinery/field-sets.ts';
import type { ResourceInfo } from '../../../src/apimachinery/gvr.ts';
import { StatusError } from '../../../src/apimachinery/status.ts';
import { NODES, PODS, pod, WIDGETS } from '../../support/watch-cache-fixtures.ts';

const EVENTS: ResourceInfo = {
  ...PODS,
  gvr: { group: '', version: 'v1', resource: 'events' },
  kind: 'Event',
};
const SECRETS: ResourceInfo = {
  ...PODS,
  gvr: { group: '', version: 'v1', resource: 'secrets' },
  kind: 'Secret',
};

function message(s: string): string {
  try {
    parseFieldSelector(s, PODS);
  } catch (e) {
    assert.ok(e instanceof StatusError);
    assert.equal(e.code, 400);
    return e.message;
  }
  assert.fail('parsed');
}

describe('parseFieldSelector', () => {
  it('parses =, ==, != and commas; exposes = terms for indexes', () => {
    const s = parseFieldSelector('spec.nodeName=n1,status.phase!=Failed,metadata.name==p', PODS)!;
    assert.equal(s.toString(), 'metadata.name=p,spec.nodeName=n1,status.phase!=Failed');
    assert.equal(s.exact('spec.nodeName'), 'n1');
    assert.equal(s.exact('status.phase'), undefined);
    assert.equal(parseFieldSelector('', PODS)!.empty, true);
  });

  it('matches the pod field set of the registry', () => {
    const p = pod('ns', 'p', 3, { nodeName: 'n1', phase: 'Running' });
    const fields = selectableFields(PODS, p.object);
    assert.deepEqual(fields, {
      'spec.nodeName': 'n1',
      'spec.restartPolicy': '',
      'spec.schedulerName': '',
      'spec.serviceAccountName': '',
      'spec.hostNetwork': 'false',
      'status.phase': 'Running',
      'status.podIP': '',
      'status.nominatedNodeName': '',
      'metadata.name': 'p',
      'metadata.namespace': 'ns',
    });
    assert.equal(parseFieldSelector('spec.nodeName=n1,status.phase=Running', PODS)!.matches(fields), true);
    assert.equal(parseFieldSelector('spec.nodeName=n2', PODS)!.matches(fields), false);
    assert.equal(parseFieldSelector('status.podIP=', PODS)!.matches(fields), true);
    assert.equal(parseFieldSelector('spec.hostNetwork!=true', PODS)!.matches(fields), true);
  });

  it('knows events, secrets and cluster-scoped metadata', () => {
    const ev = {
      metadata: { name: 'e', namespace: 'ns', resourceVersion: '1' },
      involvedObject: { kind: 'Pod', name: 'p', namespace: 'ns', uid: 'u1' },
      reason: 'Started',
      type: 'Normal',
      source: {},
      reportingComponent: 'kubelet',
    };
    const f = selectableFields(EVENTS, ev);
    assert.equal(f.source, 'kubelet');
    assert.equal(
      parseFieldSelector('involvedObject.kind=Pod,involvedObject.uid=u1,reason=Started', EVENTS)!.matches(f),
      true,
    );
    assert.equal(parseFieldSelector('type=Warning', EVENTS)!.matches(f), false);
    const sec = { metadata: { name: 's', namespace: 'ns', resourceVersion: '1' }, type: 'Opaque' };
    assert.equal(parseFieldSelector('type=Opaque', SECRETS)!.matches(selectableFields(SECRETS, sec)), true);
    const node = { metadata: { name: 'n', resourceVersion: '1' } };
    const nf = selectableFields(NODES, node);
    assert.deepEqual(nf, { 'spec.unschedulable': 'false', 'metadata.name': 'n' });
    // A cluster-scoped object has no metadata.namespace field: it reads as "" (kinds without
    // their own conversion func accept the label).
    const CLUSTERROLES: ResourceInfo = {
      ...NODES,
      gvr: { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles' },
      kind: 'ClusterRole',
    };
    const cf = selectableFields(CLUSTERROLES, node);
    assert.equal(parseFieldSelector('metadata.namespace=', CLUSTERROLES)!.matches(cf), true);
    assert.equal(parseFieldSelector('metadata.namespace=x', CLUSTERROLES)!.matches(cf), false);
  });

  it("issue 11 item 4: labels the kind's conversion func rejects are not evaluated (the apiserver answers 400)", () => {
    const NAMESPACES: ResourceInfo = {
      ...NODES,
      gvr: { group: '', version: 'v1', resource: 'namespaces' },
      kind: 'Namespace',
    };
    assert.equal(parseFieldSelector('metadata.namespace=', NODES), undefined);
    assert.equal(parseFieldSelector('metadata.namespace=x', NAMESPACES), undefined);
    assert.equal(parseFieldSelector('name=default', NAMESPACES), undefined);
    assert.notEqual(parseFieldSelector('status.phase=Active', NAMESPACES), undefined);
    assert.notEqual(parseFieldSelector('spec.unschedulable=true', NODES), undefined);
    assert.notEqual(parseFieldSelector('metadata.name=n', NODES), undefined);
  });

  it('returns undefined for a field the cache cannot evaluate', () => {
    assert.equal(parseFieldSelector('spec.containers=x', PODS), undefined);
    assert.equal(parseFieldSelector('status.phase=Running', WIDGETS), undefined);
    assert.equal(parseFieldSelector('type=Opaque', PODS), undefined);
    assert.notEqual(parseFieldSelector('metadata.name=w', WIDGETS), undefined);
  });

  it('unescapes values and reports syntax errors like fields.ParseSelector', () => {
    const s = parseFieldSelector('metadata.name=a\\,b\\=c\\\\', PODS)!;
    assert.equal(s.exact('metadata.name'), 'a,b=c\\');
    assert.equal(
      message('metadata.name'),
      "invalid selector: 'metadata.name'; can't understand 'metadata.name'",
    );
    assert.equal(message('a=b,c'), "invalid selector: 'a=b,c'; can't understand 'c'");
    assert.equal(message('metadata.name=a=b'), 'invalid field selector: unescaped character in value: 61');
    assert.equal(message('metadata.name=a\\x'), 'invalid field selector: invalid escape sequence: \\x');
    assert.equal(message('metadata.name=a\\'), 'invalid field selector: invalid escape sequence: \\');
  });
});
