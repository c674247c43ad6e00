import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuditEvent } from '../../../src/audit/event.ts';
import { LogBackend } from '../../../src/audit/log-backend.ts';
import { silentLogger } from '../../../src/util/logger.ts';

const ev = (id: string): AuditEvent => ({
  level: 'Metadata',
  auditID: id,
  stage: 'ResponseComplete',
  requestURI: '/api/v1/pods',
  verb: 'list',
  user: { username: 'u' },
  sourceIPs: [],
  userAgent: '',
  requestReceivedTimestamp: 0,
  stageTimestamp: 0,
  annotations: {},
});

describe('audit log backend and --audit-log-mode', () => {
  it('batch: a bounded buffer written later; when full new events are dropped and counted, the request unaffected', () => {
    const lines: string[] = [];
    const errors: [string, number][] = [];
    let drain: (() => void) | undefined;
    const b = new LogBackend({
      out: { write: (l) => void lines.push(l.toString()) },
      format: 'json',
      mode: 'batch',
      bufferSize: 2,
      log: silentLogger,
      metrics: { event: () => {}, error: (p, n) => void errors.push([p, n]) },
      schedule: (f) => {
        drain = f;
      },
    });
    assert.equal(b.processEvent(ev('a')), true);
    assert.equal(b.processEvent(ev('b')), true);
    assert.equal(b.processEvent(ev('c')), true, 'a full buffer never fails the request');
    assert.equal(b.buffered, 2);
    assert.deepEqual(errors, [['buffered', 1]]);
    assert.deepEqual(lines, []);
    drain!();
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { auditID: string }).auditID),
      ['a', 'b'],
    );
    b.processEvent(ev('d'));
    b.shutdown();
    assert.equal(lines.length, 3, 'shutdown writes what is buffered');
    b.processEvent(ev('e'));
    assert.deepEqual(errors, [
      ['buffered', 1],
      ['buffered', 1],
    ]);
  });

  it('blocking ignores a write error (counted); blocking-strict reports it', () => {
    const errors: string[] = [];
    const out = {
      write: () => {
        throw new Error('EIO');
      },
    };
    const metrics = { event: () => {}, error: (p: string) => void errors.push(p) };
    const blocking = new LogBackend({ out, format: 'json', mode: 'blocking', log: silentLogger, metrics });
    assert.equal(blocking.processEvent(ev('a')), true);
    const strict = new LogBackend({
      out,
      format: 'json',
      mode: 'blocking-strict',
      log: silentLogger,
      metrics,
    });
    assert.equal(strict.processEvent(ev('a')), false);
    assert.deepEqual(errors, ['log', 'log']);
  });

  it('legacy format: one text line per event', () => {
    const lines: string[] = [];
    const b = new LogBackend({
      out: { write: (l) => void lines.push(l.toString()) },
      format: 'legacy',
      mode: 'blocking',
      log: silentLogger,
    });
    b.processEvent(ev('x'));
    assert.match(lines[0]!, /^1970-01-01T00:00:00Z AUDIT: id="x" stage="ResponseComplete" .* user="u" .*\n$/);
  });
});
