import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  expandVariables,
  parseResourceEntry,
  ResourceSpecError,
  scopeString,
  splitResourceEntries,
  withinScope,
} from '../../../src/apimachinery/resource-scope.ts';

describe('resource scopes (--resources entries)', () => {
  it('splits on commas outside [...]', () => {
    assert.deepEqual(splitResourceEntries('pods[labelSelector=a in (x,y),b],services, ,nodes'), [
      'pods[labelSelector=a in (x,y),b]',
      'services',
      'nodes',
    ]);
    assert.throws(() => splitResourceEntries('pods[a'), ResourceSpecError);
    assert.throws(() => splitResourceEntries('pods]'), ResourceSpecError);
  });

  it('expands $(VAR) like the kubelet, $$ literal, unset variable an error', () => {
    assert.equal(expandVariables('a=$(X),b=$$(X),c=$y,d=$', { X: 'n1' }), 'a=n1,b=$(X),c=$y,d=$');
    assert.throws(() => expandVariables('$(NODE_NAME)', {}), /environment variable NODE_NAME is not set/);
    assert.throws(() => expandVariables('$(NODE', { NODE: 'x' }), /unterminated/);
    // Found by the pre-release attack: an empty NODE_NAME made `spec.nodeName=` (every unscheduled
    // pod), a value with a comma added a requirement nobody wrote.
    assert.throws(
      () => expandVariables('spec.nodeName=$(NODE_NAME)', { NODE_NAME: '' }),
      /NODE_NAME is empty/,
    );
    assert.throws(
      () => expandVariables('spec.nodeName=$(NODE_NAME)', { NODE_NAME: 'n1,metadata.namespace!=x' }),
      /NODE_NAME is "n1,metadata.namespace!=x": a value may not contain/,
    );
    assert.equal(
      expandVariables('spec.nodeName=$(NODE_NAME)', { NODE_NAME: 'ip-10-0-0-1.ec2.internal' }),
      'spec.nodeName=ip-10-0-0-1.ec2.internal',
    );
  });

  it('parses a scope and prints it back', () => {
    const s = parseResourceEntry('pods[labelSelector=app=x;fieldSelector=spec.nodeName=n1]');
    assert.deepEqual(s, { name: 'pods', labelSelector: 'app=x', fieldSelector: 'spec.nodeName=n1' });
    assert.equal(scopeString(s), '[fieldSelector=spec.nodeName=n1;labelSelector=app=x]');
    assert.equal(scopeString({}), '');
    assert.deepEqual(parseResourceEntry('deployments.apps'), { name: 'deployments.apps' });
  });

  it('withinScope: every scope requirement must be among the request selectors', () => {
    const node = { fieldSelector: 'spec.nodeName=n1' };
    assert.equal(withinScope(node, '', 'spec.nodeName=n1'), true);
    assert.equal(withinScope(node, '', 'spec.nodeName==n1'), true);
    assert.equal(withinScope(node, 'app=x', 'status.phase=Running,spec.nodeName=n1'), true);
    assert.equal(withinScope(node, '', 'spec.nodeName=n2'), false);
    assert.equal(withinScope(node, '', ''), false);
    assert.equal(withinScope(node, '', 'spec.nodeName!=n1'), false);
    assert.equal(withinScope(node, '', 'spec.nodeName=n1,spec.nodeName=n2'), true); // selects nothing: still inside
    assert.equal(withinScope(node, '', 'spec.nodeName'), false); // a syntax error: the handler answers it
    const labels = { labelSelector: 'app=x,tier in (a,b)' };
    assert.equal(withinScope(labels, 'tier in (b,a),app==x', ''), true);
    assert.equal(withinScope(labels, 'app=x', ''), false);
    assert.equal(withinScope(labels, 'app=x,tier in (a)', ''), false); // narrower, but not provably the same requirement
    assert.equal(withinScope(labels, 'app in (x),tier in (a,b)', ''), false);
    assert.equal(withinScope(undefined, '', ''), true);
    assert.equal(withinScope({}, '', ''), true);
  });
});
