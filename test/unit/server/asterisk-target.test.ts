import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ASTERISK_STAND_IN, asteriskAnswer, isAsteriskTarget } from '../../../src/server/asterisk-target.ts';

describe('asterisk-target', () => {
  it('only the target * itself is the asterisk form', () => {
    assert.equal(isAsteriskTarget('*'), true);
    for (const t of ['/*', '/', '*?a=b', ' *', undefined])
      assert.equal(isAsteriskTarget(t), false, String(t));
    assert.equal(ASTERISK_STAND_IN, '/*');
  });

  it("puts the path back in the apiserver's 403 message", () => {
    const body = Buffer.from(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \\"system:serviceaccount:kcp-system:none\\" cannot get path \\"/*\\"","reason":"Forbidden","details":{},"code":403}\n',
    );
    const out = asteriskAnswer({ status: 403, head: false, body, contentLength: body.length });
    assert.equal(out.contentLength, body.length - 1);
    assert.equal(
      out.body.toString(),
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \\"system:serviceaccount:kcp-system:none\\" cannot get path \\"*\\"","reason":"Forbidden","details":{},"code":403}\n',
    );
  });

  it('leaves any other answer as it is (the same object)', () => {
    const a = { status: 404, head: false, body: Buffer.from('404 page not found\n'), contentLength: 19 };
    assert.equal(asteriskAnswer(a), a);
    const head404 = { status: 404, head: true, body: Buffer.alloc(0), contentLength: 19 };
    assert.equal(asteriskAnswer(head404), head404);
  });

  it("a HEAD 403: the Content-Length of the apiserver's unsent body, one byte shorter", () => {
    const out = asteriskAnswer({ status: 403, head: true, body: Buffer.alloc(0), contentLength: 187 });
    assert.equal(out.contentLength, 186);
    assert.equal(out.body.length, 0);
  });
});
