import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseListenAddress } from '../../../src/config/listen-address.ts';

describe('parseListenAddress', () => {
  it('parses IPv4, names and bracketed IPv6', () => {
    assert.deepEqual(parseListenAddress('127.0.0.1:8081'), { host: '127.0.0.1', port: 8081 });
    assert.deepEqual(parseListenAddress('localhost:0'), { host: 'localhost', port: 0 });
    assert.deepEqual(parseListenAddress('[::1]:9000'), { host: '::1', port: 9000 });
  });
  it('rejects a missing host, a missing port and out-of-range ports', () => {
    for (const bad of [':8081', '127.0.0.1', '127.0.0.1:65536', '::1:8081', '127.0.0.1:x', '']) {
      assert.throws(() => parseListenAddress(bad), {
        message: `invalid listen address "${bad}": expected host:port, e.g. 127.0.0.1:8081 or [::1]:8081`,
      });
    }
  });
});
