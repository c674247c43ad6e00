/**
 * Issue 30: the audit of the requests the proxy answers itself, through the server's steps with
 * a fake cache (the events compared with the apiserver's own are in test/e2e/audit.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Auditor } from '../../../src/audit/auditor.ts';
import { PolicyRuleEvaluator } from '../../../src/audit/checker.ts';
import { type LineWriter, LogBackend } from '../../../src/audit/log-backend.ts';
import { loadPolicy } from '../../../src/audit/policy.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { mockServer, pod } from '../../support/fake-cache.ts';

type Event = Record<string, unknown> & {
  stage: string;
  auditID: string;
  responseStatus?: Record<string, unknown>;
  responseObject?: unknown;
  annotations?: Record<string, string>;
};

function audited(
  rules: string,
  o: {
    passedUpstream?: boolean;
    out?: LineWriter;
    mode?: 'blocking' | 'blocking-strict' | 'batch';
    extra?: string;
  } = {},
) {
  const lines: string[] = [];
  const backend = new LogBackend({
    out: o.out ?? { write: (l) => void lines.push(l.toString()) },
    format: 'json',
    mode: o.mode ?? 'blocking',
    log: silentLogger,
  });
  const auditor = new Auditor({
    evaluator: new PolicyRuleEvaluator(
      loadPolicy(`apiVersion: audit.k8s.io/v1\nkind: Policy\n${o.extra ?? ''}rules:\n${rules}`).policy,
    ),
    backend,
    passedUpstream: o.passedUpstream ?? false,
  });
  const m = mockServer([pod('a', 'p1', 7)], { audit: auditor });
  const events = () => lines.map((l) => JSON.parse(l) as Event);
  return { ...m, lines, events };
}

const LIST = '/api/v1/namespaces/a/pods?resourceVersion=0';

describe('issue 30: audit of requests answered from the cache', () => {
  it('Metadata: RequestReceived then ResponseComplete, the request as the apiserver records it, the Audit-Id echoed', async () => {
    const { server, agent, events, lines } = audited('- level: Metadata\n');
    try {
      const r = await server.app.inject({
        method: 'GET',
        url: LIST,
        headers: { 'user-agent': 'test-agent', authorization: 'Bearer s3cr3t-t0ken' },
      });
      assert.equal(r.statusCode, 200);
      const [received, complete] = events();
      assert.equal(events().length, 2);
      assert.equal(r.headers['audit-id'], received!.auditID);
      assert.match(received!.auditID, /^[0-9a-f-]{36}$/);
      const common = {
        kind: 'Event',
        apiVersion: 'audit.k8s.io/v1',
        level: 'Metadata',
        auditID: received!.auditID,
        requestURI: LIST,
        verb: 'list',
        user: {},
        sourceIPs: ['127.0.0.1'],
        userAgent: 'test-agent',
        objectRef: { resource: 'pods', namespace: 'a', apiVersion: 'v1' },
      };
      const { requestReceivedTimestamp: t0, stageTimestamp: s0, ...r0 } = received!;
      assert.deepEqual(r0, { ...common, stage: 'RequestReceived' });
      assert.equal(s0, t0, 'RequestReceived is stamped with the receive time');
      const { requestReceivedTimestamp: t1, stageTimestamp: _s1, ...r1 } = complete!;
      assert.deepEqual(r1, {
        ...common,
        stage: 'ResponseComplete',
        responseStatus: { metadata: {}, code: 200 },
      });
      assert.equal(t1, t0);
      assert.ok(!lines.join('').includes('s3cr3t-t0ken'), 'a token never appears in an event');
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });

  it("a client's Audit-ID is the event's ID, as the apiserver takes it", async () => {
    const { server, agent, events } = audited('- level: Metadata\n');
    try {
      const r = await server.app.inject({ method: 'GET', url: LIST, headers: { 'audit-id': 'mine-1' } });
      assert.equal(r.headers['audit-id'], 'mine-1');
      assert.deepEqual(
        events().map((e) => e.auditID),
        ['mine-1', 'mine-1'],
      );
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });

  it('RequestResponse: the response object; omitManagedFields drops metadata.managedFields of each item', async () => {
    const { server, agent, events, cache } = audited('- level: RequestResponse\n  omitManagedFields: true\n');
    const withFields = pod('a', 'p1', 7);
    (withFields.object.metadata as Record<string, unknown>).managedFields = [{ manager: 'm' }];
    cache.objects = [{ object: withFields.object, raw: Buffer.from(JSON.stringify(withFields.object)) }];
    try {
      const r = await server.app.inject({ method: 'GET', url: LIST });
      assert.equal(r.statusCode, 200);
      const body = JSON.parse(r.body) as { items: { metadata: Record<string, unknown> }[] };
      assert.ok(body.items[0]!.metadata.managedFields, 'the client gets them');
      const complete = events()[1]!;
      const obj = complete.responseObject as typeof body;
      delete body.items[0]!.metadata.managedFields;
      assert.deepEqual(obj, body);
      assert.equal('responseObject' in events()[0]!, false, 'not in RequestReceived');
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });

  it('below RequestResponse no response object; an error answer still gives its Status fields', async () => {
    const { server, agent, events } = audited('- level: Request\n');
    try {
      const ok = await server.app.inject({
        method: 'GET',
        url: '/api/v1/namespaces/a/pods/p1?resourceVersion=0',
      });
      assert.equal(ok.statusCode, 200);
      assert.equal('responseObject' in events()[1]!, false);
      const missing = await server.app.inject({
        method: 'GET',
        url: '/api/v1/namespaces/a/pods/nope?resourceVersion=0',
      });
      assert.equal(missing.statusCode, 404);
      const e = events()[3]!;
      assert.deepEqual(e.responseStatus, {
        metadata: {},
        status: 'Failure',
        message: 'pods "nope" not found',
        reason: 'NotFound',
        details: { name: 'nope', kind: 'pods' },
        code: 404,
      });
      assert.equal('responseObject' in e, false);
      assert.deepEqual(e.objectRef, { resource: 'pods', namespace: 'a', name: 'nope', apiVersion: 'v1' });
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });

  it('level None writes nothing; omitStages leaves out the stages named', async () => {
    const none = audited('- level: None\n  resources: [{group: "", resources: [pods]}]\n- level: Metadata\n');
    try {
      await none.server.app.inject({ method: 'GET', url: LIST });
      assert.deepEqual(none.lines, []);
    } finally {
      await none.server.shutdown();
      await none.agent.close();
    }
    const omit = audited('- level: Metadata\n', { extra: 'omitStages: [RequestReceived]\n' });
    try {
      await omit.server.app.inject({ method: 'GET', url: LIST });
      assert.deepEqual(
        omit.events().map((e) => e.stage),
        ['ResponseComplete'],
      );
    } finally {
      await omit.server.shutdown();
      await omit.agent.close();
    }
  });

  it('a request passed upstream is audited only with --audit-passed-upstream: Metadata at most, annotated with the reason, under the ID sent upstream', async () => {
    for (const passedUpstream of [false, true]) {
      const { server, agent, events } = audited('- level: RequestResponse\n', { passedUpstream });
      let sentID: string | undefined;
      agent
        .get('https://apiserver.test:6443')
        .intercept({ path: '/api/v1/namespaces/a/configmaps', method: 'GET' })
        .reply(
          200,
          (opts) => {
            sentID = (opts.headers as Record<string, string>)['audit-id'];
            return '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[]}';
          },
          { headers: { 'content-type': 'application/json' } },
        );
      try {
        const r = await server.app.inject({ method: 'GET', url: '/api/v1/namespaces/a/configmaps' });
        assert.equal(r.statusCode, 200);
        if (!passedUpstream) {
          assert.deepEqual(events(), []);
          assert.equal(sentID, undefined, 'the request is forwarded as it came');
          continue;
        }
        const [received, complete] = events();
        assert.equal(events().length, 2);
        assert.equal(complete!.level, 'Metadata');
        assert.deepEqual(complete!.annotations, { 'kube-cache-proxy.io/passed-upstream': 'not-cached' });
        assert.equal(received!.auditID, sentID, 'the apiserver logs it under the same audit ID');
        assert.equal('responseObject' in complete!, false);
        assert.deepEqual(complete!.responseStatus, { metadata: {}, code: 200 });
      } finally {
        await server.shutdown();
        await agent.close();
      }
    }
  });

  it('blocking-strict: a RequestReceived that cannot be written fails the request with 500; blocking only logs it', async () => {
    const failing: LineWriter = {
      write: () => {
        throw new Error('ENOSPC: no space left on device');
      },
    };
    const strict = audited('- level: Metadata\n', { out: failing, mode: 'blocking-strict' });
    try {
      const r = await strict.server.app.inject({ method: 'GET', url: LIST });
      assert.equal(r.statusCode, 500);
      assert.deepEqual(JSON.parse(r.body), {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Internal error occurred: failed to store audit event',
        reason: 'InternalError',
        details: { causes: [{ message: 'failed to store audit event' }] },
        code: 500,
      });
    } finally {
      await strict.server.shutdown();
      await strict.agent.close();
    }
    const blocking = audited('- level: Metadata\n', { out: failing, mode: 'blocking' });
    try {
      const r = await blocking.server.app.inject({ method: 'GET', url: LIST });
      assert.equal(r.statusCode, 200);
    } finally {
      await blocking.server.shutdown();
      await blocking.agent.close();
    }
  });
});
