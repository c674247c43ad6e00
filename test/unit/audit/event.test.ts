import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type AuditEvent,
  eventJSON,
  eventString,
  microTime,
  sourceIPs,
  truncateUserAgent,
} from '../../../src/audit/event.ts';

const ev = (over: Partial<AuditEvent> = {}): AuditEvent => ({
  level: 'Metadata',
  auditID: 'id-1',
  stage: 'ResponseComplete',
  requestURI: '/api/v1/namespaces/limited/configmaps?limit=5',
  verb: 'list',
  user: { username: 'u', uid: 'x', groups: ['g2', 'g1'], extra: { b: ['2'], a: ['1'] } },
  sourceIPs: ['127.0.0.1'],
  userAgent: 'curl/7.88.1',
  objectRef: {
    resource: 'configmaps',
    namespace: 'limited',
    name: '',
    apiGroup: '',
    apiVersion: 'v1',
    subresource: '',
  },
  responseStatus: { code: 200 },
  requestReceivedTimestamp: 1_796_548_314_547_215,
  stageTimestamp: 1_796_548_314_550_923,
  annotations: { 'z/b': '1', 'a/b': 'x<y' },
  ...over,
});

describe('audit event (audit.k8s.io/v1 Event)', () => {
  it("JSON in Go's field order, empty fields omitted, map keys sorted, HTML-safe escapes, microsecond times", () => {
    assert.equal(
      eventJSON(ev()),
      '{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"id-1","stage":"ResponseComplete",' +
        '"requestURI":"/api/v1/namespaces/limited/configmaps?limit=5","verb":"list",' +
        '"user":{"username":"u","uid":"x","groups":["g2","g1"],"extra":{"a":["1"],"b":["2"]}},' +
        '"sourceIPs":["127.0.0.1"],"userAgent":"curl/7.88.1",' +
        '"objectRef":{"resource":"configmaps","namespace":"limited","apiVersion":"v1"},' +
        '"responseStatus":{"metadata":{},"code":200},' +
        '"requestReceivedTimestamp":"2026-12-06T09:11:54.547215Z","stageTimestamp":"2026-12-06T09:11:54.550923Z",' +
        '"annotations":{"a/b":"x\\u003cy","z/b":"1"}}\n',
    );
  });

  it('the raw response object spliced in; a user without fields is {}; no annotations, no key', () => {
    const line = eventJSON(
      ev({
        user: {},
        annotations: {},
        responseObject: '{"kind":"ConfigMapList","items":[]}',
        objectRef: undefined,
      }),
    );
    const o = JSON.parse(line) as Record<string, unknown>;
    assert.deepEqual(o.user, {});
    assert.deepEqual(o.responseObject, { kind: 'ConfigMapList', items: [] });
    assert.equal('annotations' in o, false);
    assert.equal('objectRef' in o, false);
    assert.ok(line.indexOf('"responseObject"') < line.indexOf('"requestReceivedTimestamp"'));
  });

  it('MicroTime pads to six digits', () => {
    assert.equal(microTime(1_000_000_000_000_001), '2001-09-09T01:46:40.000001Z');
  });

  it('sourceIPs: X-Forwarded-For entries, X-Real-Ip unless present, the remote address unless last', () => {
    assert.deepEqual(sourceIPs(undefined, undefined, '::ffff:127.0.0.1'), ['127.0.0.1']);
    assert.deepEqual(sourceIPs('10.0.0.1, junk, 10.0.0.2', '10.0.0.1', '127.0.0.1'), [
      '10.0.0.1',
      '10.0.0.2',
      '127.0.0.1',
    ]);
    assert.deepEqual(sourceIPs('10.0.0.1', '10.0.0.3', '10.0.0.3'), ['10.0.0.1', '10.0.0.3']);
  });

  it('user agent truncated at 1024 bytes', () => {
    assert.equal(truncateUserAgent('kubectl/v1.37.2'), 'kubectl/v1.37.2');
    assert.equal(truncateUserAgent('x'.repeat(1030)), `${'x'.repeat(1024)}...TRUNCATED`);
  });

  it('legacy format: EventString', () => {
    assert.equal(
      eventString(ev()),
      '2026-12-06T09:11:54.547215Z AUDIT: id="id-1" stage="ResponseComplete" ip="127.0.0.1" method="list" user="u" groups="\\"g2\\",\\"g1\\"" as="<self>" asgroups="<lookup>" user-agent="curl/7.88.1" namespace="limited" uri="/api/v1/namespaces/limited/configmaps?limit=5" response="200"',
    );
    assert.match(
      eventString(ev({ user: {}, responseStatus: undefined })),
      / user="<none>" groups="<none>" .* response="<deferred>"$/,
    );
  });
});
