import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../../src/util/logger.ts';

function capture(): { logger: ReturnType<typeof createLogger>; text: () => string } {
  let out = '';
  const logger = createLogger({
    destination: new Writable({
      write(chunk, _enc, cb) {
        out += String(chunk);
        cb();
      },
    }),
  });
  return { logger, text: () => out };
}

describe('createLogger redaction', () => {
  it('redacts headers, tokens and kubeconfig secrets wherever they are logged', () => {
    const { logger, text } = capture();
    const secret = 'S3CRET-value';
    logger.info({ req: { headers: { authorization: `Bearer ${secret}`, cookie: secret } } }, 'a');
    logger.info({ headers: { authorization: `Bearer ${secret}`, Authorization: secret } }, 'b');
    logger.info({ upstream: { headers: { authorization: secret } } }, 'c');
    logger.info({ authorization: secret, token: secret, password: secret, key: secret }, 'd');
    logger.info(
      { user: { token: secret, password: secret, 'client-key-data': secret, keyData: secret } },
      'e',
    );
    logger.info({ users: [{ name: 'u', user: { token: secret, 'client-key-data': secret } }] }, 'f');
    logger.info({ opts: { token: secret, bearerToken: secret, keyData: secret } }, 'g');
    const out = text();
    assert.equal(out.split('\n').filter((l) => l !== '').length, 7);
    assert.equal(out.includes(secret), false, out);
    assert.equal((out.match(/\[REDACTED\]/g) ?? []).length, 18);
  });

  it('keeps everything else', () => {
    const { logger, text } = capture();
    logger.info({ resource: 'pods', verb: 'watch', user: { name: 'u' } }, 'ok');
    const line = JSON.parse(text()) as Record<string, unknown>;
    assert.deepEqual(
      [line.resource, line.verb, line.user, line.msg, line.app],
      ['pods', 'watch', { name: 'u' }, 'ok', 'kube-cache-proxy'],
    );
  });

  it('an error whose message already names its cause is logged once, the cause beside it', () => {
    // Regression (a new user's try): "discovery of /api failed: connect ECONNREFUSED 127.0.0.1:1"
    // was logged with the cause chain's messages joined on: ECONNREFUSED three times over.
    const { logger, text } = capture();
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:1');
    const mid = new Error(refused.message, { cause: refused });
    const err = new Error(`discovery of /api failed: ${mid.message}`, { cause: mid });
    logger.warn({ err }, 'discovery failed');
    const line = JSON.parse(text()) as {
      err: { message: string; cause: { message: string; cause: { message: string } } };
    };
    assert.equal(line.err.message, 'discovery of /api failed: connect ECONNREFUSED 127.0.0.1:1');
    assert.equal(line.err.cause.message, 'connect ECONNREFUSED 127.0.0.1:1');
    assert.equal(line.err.cause.cause.message, 'connect ECONNREFUSED 127.0.0.1:1');
  });
});
