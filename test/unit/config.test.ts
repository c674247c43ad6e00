import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, OPTIONS, renderReference } from '../../src/config.ts';
import { ConfigError } from '../../src/util/errors.ts';

function cfg(argv: string[], env: Record<string, string> = {}, files: Record<string, string> = {}) {
  const r = loadConfig({
    argv,
    env,
    readFile: (p) => {
      const f = files[p];
      if (f === undefined) throw Object.assign(new Error('nope'), { code: 'ENOENT' });
      return f;
    },
  });
  assert.equal(r.kind, 'config');
  return (r as Extract<typeof r, { kind: 'config' }>).config;
}

function fails(
  argv: string[],
  message: string,
  env: Record<string, string> = {},
  files: Record<string, string> = {},
) {
  assert.throws(
    () => cfg(argv, env, files),
    (e: unknown) => e instanceof ConfigError && e.message === message,
  );
}

describe('config', () => {
  it('defaults', () => {
    assert.deepEqual(cfg([]), {
      resources: [],
      listen: { host: '127.0.0.1', port: 8001 },
      opsListen: { host: '127.0.0.1', port: 8081 },
      consistentReads: 'cache',
      logLevel: 'info',
      maxInflight: 400,
      maxWatchers: 1000,
    });
  });

  it('flag > env > file', () => {
    const files = {
      '/c.yaml': 'resources: [pods, deployments.apps]\nnamespace: fromfile\nlisten: 127.0.0.1:9000\n',
    };
    const c = cfg(
      ['--config', '/c.yaml', '--namespace', 'fromflag'],
      { KCP_LISTEN: '127.0.0.2:9001' },
      files,
    );
    assert.deepEqual(c.resources, ['pods', 'deployments.apps']);
    assert.equal(c.namespace, 'fromflag');
    assert.deepEqual(c.listen, { host: '127.0.0.2', port: 9001 });
    assert.deepEqual(cfg(['--resources', 'pods,configmaps,pods']).resources, ['pods', 'configmaps']);
    assert.deepEqual(cfg(['--listen', '[::1]:8001']).listen, { host: '::1', port: 8001 });
  });

  it('one-line errors naming the flag, variable or file key', () => {
    fails(['--listen', 'nope'], '--listen: invalid address "nope" (want HOST:PORT)');
    fails([], 'KCP_CONSISTENT_READS: invalid value "maybe" (want one of cache, upstream)', {
      KCP_CONSISTENT_READS: 'maybe',
    });
    fails(['--max-inflight', '0'], '--max-inflight: invalid value "0" (want a positive integer)');
    fails(['--resources', 'Pods'], '--resources: invalid resource "Pods" (want resource[.group])');
    fails(['--config', '/x.yaml'], '--config /x.yaml: cannot read: ENOENT');
    fails(
      ['--config', '/c.yaml'],
      '--config /c.yaml: unknown key "listenn"',
      {},
      { '/c.yaml': 'listenn: 1\n' },
    );
    fails(
      ['--config', '/c.yaml'],
      '/c.yaml: maxWatchers: invalid value "lots" (want a positive integer)',
      {},
      { '/c.yaml': 'maxWatchers: lots\n' },
    );
    fails(['--kubeconfig', '/nonexistent/kc'], '--kubeconfig: no such file "/nonexistent/kc"');
    fails(['--nope'], "Unknown option '--nope'");
  });

  it('refuses a non-loopback listen address, saying why', () => {
    fails(
      ['--listen', '0.0.0.0:8001'],
      "--listen: refusing to listen on non-loopback address 0.0.0.0: client authentication does not exist yet, so anyone reaching it would act with the proxy's credentials (bind 127.0.0.1 or ::1)",
    );
    assert.deepEqual(cfg(['--listen', 'localhost:1']).listen, { host: 'localhost', port: 1 });
  });

  it('--help and --version are not configs', () => {
    assert.equal(loadConfig({ argv: ['--version'], env: {} }).kind, 'version');
    assert.equal(loadConfig({ argv: ['--help'], env: {} }).kind, 'help');
  });

  it('the reference table lists every option once', () => {
    const ref = renderReference();
    for (const o of OPTIONS) assert.equal(ref.split(`\`--${o.flag}\``).length, 2, o.flag);
  });
});
