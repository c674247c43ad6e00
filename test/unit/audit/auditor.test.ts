import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { Auditor } from '../../../src/audit/auditor.ts';
import { PolicyRuleEvaluator } from '../../../src/audit/checker.ts';
import { LogBackend } from '../../../src/audit/log-backend.ts';
import { loadPolicy } from '../../../src/audit/policy.ts';
import { silentLogger } from '../../../src/util/logger.ts';

function setup(level = 'Metadata') {
  const lines: string[] = [];
  let t = 1_000_000;
  const auditor = new Auditor({
    evaluator: new PolicyRuleEvaluator(
      loadPolicy(`apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: ${level}}]\n`).policy,
    ),
    backend: new LogBackend({
      out: { write: (l) => void lines.push(l.toString()) },
      format: 'json',
      mode: 'blocking',
      log: silentLogger,
    }),
    passedUpstream: false,
    now: () => (t += 1000),
  });
  const req = { headers: {}, socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage;
  const begin = (longRunning: boolean) =>
    auditor.begin({
      req,
      url: '/api/v1/pods?watch=1',
      attrs: {
        user: undefined,
        verb: longRunning ? 'watch' : 'list',
        resourceRequest: true,
        path: '/api/v1/pods',
        apiGroup: '',
        apiVersion: 'v1',
        resource: 'pods',
      },
      receivedAt: 500,
      longRunning,
      auditID: 'a1',
    })!;
  const stages = () =>
    lines.map((l) => JSON.parse(l) as { stage: string; responseStatus?: Record<string, unknown> });
  return { begin, stages };
}

/** A response object with the methods the auditor wraps (no socket). */
function fakeResponse(): ServerResponse {
  return {
    statusCode: 200,
    writeHead() {
      return this;
    },
    write: () => true,
    end() {
      return this;
    },
    getHeader: () => undefined,
  } as unknown as ServerResponse;
}

describe('audit of one request: stages (audit.go)', () => {
  it('a watch: ResponseStarted when its head is written, ResponseComplete when it ends', () => {
    const { begin, stages } = setup();
    const r = begin(true);
    const res = fakeResponse();
    r.requestReceived();
    r.attach(res);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"type":"ADDED"}\n');
    assert.deepEqual(
      stages().map((e) => e.stage),
      ['RequestReceived', 'ResponseStarted'],
    );
    r.complete();
    r.complete();
    assert.deepEqual(
      stages().map((e) => [e.stage, e.responseStatus]),
      [
        ['RequestReceived', undefined],
        ['ResponseStarted', { metadata: {}, code: 200 }],
        ['ResponseComplete', { metadata: {}, code: 200 }],
      ],
    );
  });

  it('nothing written before the end: 200 "Connection closed early" (ResponseStarted too for a watch)', () => {
    const { begin, stages } = setup();
    const r = begin(true);
    r.requestReceived();
    r.attach(fakeResponse());
    r.complete();
    assert.deepEqual(
      stages().map((e) => [e.stage, e.responseStatus]),
      [
        ['RequestReceived', undefined],
        [
          'ResponseStarted',
          { metadata: {}, status: 'Success', message: 'Connection closed early', code: 200 },
        ],
        [
          'ResponseComplete',
          { metadata: {}, status: 'Success', message: 'Connection closed early', code: 200 },
        ],
      ],
    );
  });

  it("an error thrown while serving: Panic with the apiserver's 500, and no ResponseComplete after it", () => {
    const { begin, stages } = setup();
    const r = begin(false);
    r.requestReceived();
    r.panic(new Error('boom'));
    r.complete();
    assert.deepEqual(
      stages().map((e) => [e.stage, e.responseStatus]),
      [
        ['RequestReceived', undefined],
        [
          'Panic',
          {
            metadata: {},
            status: 'Failure',
            message: "APIServer panic'd: boom",
            reason: 'InternalError',
            code: 500,
          },
        ],
      ],
    );
  });
});
