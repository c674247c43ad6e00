import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkListenMode, isLoopbackHost } from '../../../src/config/listen-mode.ts';
import { ConfigError } from '../../../src/util/errors.ts';

const base = { listen: { host: '127.0.0.1', port: 8001 }, delegatedAuth: false, hostNetwork: false };
const tls = { tlsCertFile: '/c', tlsPrivateKeyFile: '/k' };

describe('checkListenMode (sidecar, authenticated, refused)', () => {
  it('loopback without auth is the sidecar mode', () => {
    checkListenMode(base, '--host-network');
    checkListenMode({ ...base, listen: { host: '::1', port: 1 } }, '--host-network');
  });
  it('non-loopback needs TLS and --delegated-auth, naming what is missing', () => {
    assert.throws(
      () => checkListenMode({ ...base, listen: { host: '10.0.0.1', port: 8443 }, ...tls }, '--host-network'),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.message === '--listen 10.0.0.1:8443 is not a loopback address: it requires --delegated-auth',
    );
    checkListenMode(
      { ...base, listen: { host: '0.0.0.0', port: 8443 }, ...tls, delegatedAuth: true },
      '--host-network',
    );
  });
  it('hostNetwork on loopback is refused too', () => {
    assert.throws(
      () => checkListenMode({ ...base, hostNetwork: true }, '--host-network'),
      (e: unknown) =>
        e instanceof ConfigError && e.message.startsWith("--host-network: the pod's loopback is shared"),
    );
  });
  it('loopback names', () => {
    for (const h of ['localhost', '127.0.0.1', '127.1.2.3', '::1']) assert.ok(isLoopbackHost(h), h);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', 'example.com']) assert.equal(isLoopbackHost(h), false, h);
  });
});
