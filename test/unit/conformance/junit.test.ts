import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJUnit, xmlUnescape } from '../../conformance/junit.ts';

// The shape k8s.io/kubernetes test/e2e/framework/internal/junit writes through Ginkgo v2's
// GenerateJUnitReportWithConfig (leaf node type kept, labels inline in the text, failure message
// attribute omitted, timelines only for failures).
const REPORT = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="5" disabled="1" errors="0" failures="1" time="42.5">
      <testsuite name="Kubernetes e2e suite" package="/work" tests="5" disabled="1" skipped="2" errors="0" failures="1" time="42.5" timestamp="2026-12-06T09:00:00">
          <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1.5"></testcase>
          <testcase name="[It] [sig-api-machinery] Watchers should be able to start watching from a specific resource version [Conformance]" classname="Kubernetes e2e suite" status="passed" time="3.25"></testcase>
          <testcase name="[It] [sig-api-machinery] Servers with support for API chunking should return chunks of results for list calls [Conformance]" classname="Kubernetes e2e suite" status="failed" time="12.0">
              <failure type="failed">[FAILED] Expected&#xA;    &lt;int&gt;: 440&#xA;to equal &quot;400&quot; &amp; more</failure>
              <system-err>timeline</system-err>
          </testcase>
          <testcase name="[It] [sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should mutate pod [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0">
              <skipped message="skipped"></skipped>
          </testcase>
          <testcase name="[It] [sig-node] Pods should be dynamic [Feature:X]" classname="Kubernetes e2e suite" status="skipped" time="0.01">
              <skipped message="skipped - Only supported for providers [gce] (not skeleton)"></skipped>
          </testcase>
          <testcase name="[It] [sig-api-machinery] timed out spec" classname="Kubernetes e2e suite" status="timedout" time="60"><error type="timedout"/></testcase>
      </testsuite>
  </testsuites>`;

describe('parseJUnit (the e2e framework JUnit report)', () => {
  const specs = parseJUnit(REPORT);

  it('keeps the It specs only, names without the leaf node type, in report order', () => {
    assert.deepEqual(
      specs.map((s) => s.name),
      [
        '[sig-api-machinery] Watchers should be able to start watching from a specific resource version [Conformance]',
        '[sig-api-machinery] Servers with support for API chunking should return chunks of results for list calls [Conformance]',
        '[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should mutate pod [Conformance]',
        '[sig-node] Pods should be dynamic [Feature:X]',
        '[sig-api-machinery] timed out spec',
      ],
    );
  });

  it('reads state, seconds and the failure text with entities resolved', () => {
    assert.deepEqual(specs[0], {
      name: specs[0]!.name,
      state: 'passed',
      seconds: 3.25,
      message: '',
      filtered: false,
    });
    assert.equal(specs[1]!.state, 'failed');
    assert.equal(specs[1]!.seconds, 12);
    assert.equal(specs[1]!.message, '[FAILED] Expected\n    <int>: 440\nto equal "400" & more');
    assert.equal(specs[4]!.state, 'timedout');
  });

  it('tells a spec the filters left out from one that skipped itself at run time', () => {
    assert.equal(specs[2]!.filtered, true);
    assert.equal(specs[2]!.message, '');
    assert.equal(specs[3]!.filtered, false);
    assert.equal(specs[3]!.state, 'skipped');
    assert.equal(specs[3]!.message, 'Only supported for providers [gce] (not skeleton)');
  });

  it('throws on text that is no JUnit report', () => {
    assert.throws(() => parseJUnit(''), /not a JUnit report/);
  });

  it('xmlUnescape resolves named, decimal and hex references and leaves unknown ones', () => {
    assert.equal(xmlUnescape('&lt;a&gt; &amp;&apos;&quot; &#65;&#x42; &nbsp;'), `<a> &'" AB &nbsp;`);
  });
});
