import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, OPTIONS, renderReference } from '../../../src/config/config.ts';
import { ConfigError } from '../../../src/util/errors.ts';

function cfg(
  argv: string[],
  env: Record<string, string> = {},
  files: Record<string, string> = {},
  config?: string,
) {
  const r = loadConfig({
    argv: config ? [...argv, '--config', config] : argv,
    env,
    exists: (p) => files[p] !== undefined,
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
  message: string | RegExp,
  env: Record<string, string> = {},
  files: Record<string, string> = {},
) {
  assert.throws(
    () => cfg(argv, env, files),
    (e: unknown) =>
      e instanceof ConfigError &&
      (typeof message === 'string' ? e.message === message : message.test(e.message)),
  );
}

describe('config', () => {
  it('defaults', () => {
    assert.deepEqual(cfg([]), {
      resources: [],
      // Issue 15: without --resources the proxy caches on demand, secrets excluded.
      auto: true,
      autoExclude: ['secrets'],
      autoIdleTimeout: 600_000,
      autoMaxResources: 100,
      autoMaxBytes: 1_073_741_824,
      listen: { host: '127.0.0.1', port: 8001 },
      opsListen: { host: '127.0.0.1', port: 8081 },
      consistentReads: 'cache',
      upstreamWatchEncoding: 'identity',
      responseCompression: 'none',
      protobufAnswers: 'cache',
      snapshotInterval: 60_000,
      snapshotSecrets: false,
      logLevel: 'info',
      maxInflight: 400,
      maxWatchers: 1000,
      maxParkedWatchers: 1000,
      delegatedAuth: false,
      authenticationTokenWebhookCacheTtl: 10_000,
      authorizationWebhookCacheAuthorizedTtl: 10_000,
      authorizationWebhookCacheUnauthorizedTtl: 10_000,
      authorizationOutageGrace: 0,
      impersonateCertificateClients: false,
      acceptHosts: ['^localhost$', '^127\\.0\\.0\\.1$', '^\\[::1\\]$'],
      hostNetwork: false,
      acceptPaths: ['^.*'],
      rejectPaths: ['^/api/.*/pods/.*/exec', '^/api/.*/pods/.*/attach'],
      rejectMethods: ['^$'],
      upstreamCheckInterval: 60_000,
      watchLivenessWindow: 180_000,
      certReloadInterval: 60_000,
      // Issue 30: no audit unless --audit-policy-file and --audit-log-path; the apiserver's defaults.
      auditLogMaxage: 0,
      auditLogMaxbackup: 0,
      auditLogMaxsize: 0,
      auditLogFormat: 'json',
      auditLogMode: 'blocking',
      auditLogBatchBufferSize: 10_000,
      auditLogCompress: false,
      auditPassedUpstream: false,
    });
  });

  it('issue 30: the audit flags, as the apiserver names them; 0 allowed where it means no limit', () => {
    const c = cfg([
      '--audit-policy-file=/p.yaml',
      '--audit-log-path=-',
      '--audit-log-maxage=0',
      '--audit-log-maxbackup=3',
      '--audit-log-maxsize=100',
      '--audit-log-format=legacy',
      '--audit-log-mode=batch',
      '--audit-log-batch-buffer-size=5',
      '--audit-log-compress',
      '--audit-passed-upstream',
    ]);
    assert.equal(c.auditPolicyFile, '/p.yaml');
    assert.equal(c.auditLogPath, '-');
    assert.equal(c.auditLogMaxage, 0);
    assert.equal(c.auditLogMaxbackup, 3);
    assert.equal(c.auditLogMaxsize, 100);
    assert.equal(c.auditLogFormat, 'legacy');
    assert.equal(c.auditLogMode, 'batch');
    assert.equal(c.auditLogBatchBufferSize, 5);
    assert.equal(c.auditLogCompress, true);
    assert.equal(c.auditPassedUpstream, true);
    assert.equal(cfg([], { KCP_AUDIT_LOG_MODE: 'blocking-strict' }).auditLogMode, 'blocking-strict');
    fails(
      ['--audit-log-maxsize=-1'],
      '--audit-log-maxsize: invalid value "-1" (want 0 or a positive integer)',
    );
    fails(
      ['--audit-log-mode=async'],
      '--audit-log-mode: invalid value "async" (want one of blocking, blocking-strict, batch)',
    );
    fails(['--audit-log-format=yaml'], '--audit-log-format: invalid value "yaml" (want one of json, legacy)');
    fails(
      ['--audit-log-batch-buffer-size=0'],
      '--audit-log-batch-buffer-size: invalid value "0" (want a positive integer)',
    );
  });

  it("the path and method filter: kubectl proxy's defaults without --delegated-auth, no rejected path with it", () => {
    const files = { '/t.crt': 'c', '/t.key': 'k' };
    const tls = ['--tls-cert-file', '/t.crt', '--tls-private-key-file', '/t.key'];
    assert.deepEqual(cfg(tls, {}, files).rejectPaths, ['^/api/.*/pods/.*/exec', '^/api/.*/pods/.*/attach']);
    const authenticated = cfg([...tls, '--delegated-auth'], {}, files);
    assert.deepEqual(authenticated.rejectPaths, []);
    assert.deepEqual(authenticated.acceptPaths, ['^.*']);
    assert.deepEqual(authenticated.rejectMethods, ['^$']);
    // Given, it is used in every mode; empty means none.
    assert.deepEqual(cfg([...tls, '--delegated-auth', '--reject-paths', '/exec$'], {}, files).rejectPaths, [
      '/exec$',
    ]);
    assert.deepEqual(cfg(['--reject-paths', '']).rejectPaths, []);
    assert.deepEqual(cfg([], { KCP_REJECT_PATHS: '' }).rejectPaths, []);
    assert.deepEqual(cfg([], {}, { '/c.yaml': 'rejectPaths: []\n' }, '/c.yaml').rejectPaths, []);
    assert.deepEqual(cfg(['--reject-methods', 'POST,PUT,PATCH,DELETE']).rejectMethods, [
      'POST',
      'PUT',
      'PATCH',
      'DELETE',
    ]);
    assert.deepEqual(cfg(['--accept-paths', '^/api/,^/apis/']).acceptPaths, ['^/api/', '^/apis/']);
    fails(['--reject-paths', '[a'], /^--reject-paths: invalid regular expression "\[a"/);
    fails(['--reject-methods', '('], /^--reject-methods: invalid regular expression "\("/);
    fails([], /^KCP_ACCEPT_PATHS: invalid regular expression "\)"/, { KCP_ACCEPT_PATHS: ')' });
  });

  it('issue 15: auto among --resources, alone or with explicit entries; the auto flags', () => {
    const both = cfg(['--resources', 'auto,pods[fieldSelector=spec.nodeName=n1]']);
    assert.equal(both.auto, true);
    assert.deepEqual(both.resources, [{ name: 'pods', fieldSelector: 'spec.nodeName=n1' }]);
    const explicit = cfg(['--resources', 'configmaps']);
    assert.equal(explicit.auto, false, 'explicit --resources without auto: no on-demand caches');
    assert.deepEqual(explicit.resources, [{ name: 'configmaps' }]);
    assert.equal(cfg([], { KCP_RESOURCES: 'auto' }).auto, true);
    const c = cfg([
      '--auto-exclude',
      'secrets, Leases.coordination.k8s.io',
      '--auto-idle-timeout',
      '90s',
      '--auto-max-resources',
      '3',
      '--auto-max-bytes',
      '1048576',
    ]);
    assert.deepEqual(c.autoExclude, ['secrets', 'leases.coordination.k8s.io']);
    assert.equal(c.autoIdleTimeout, 90_000);
    assert.equal(c.autoMaxResources, 3);
    assert.equal(c.autoMaxBytes, 1_048_576);
    assert.deepEqual(cfg(['--auto-exclude', '']).autoExclude, []);
    fails(['--resources', 'auto[labelSelector=a=b]'], '--resources: "auto" takes no scope');
    fails(
      ['--auto-exclude', 'pods/status'],
      '--auto-exclude: invalid resource "pods/status" (want resource[.group])',
    );
    fails(
      ['--auto-idle-timeout', 'soon'],
      '--auto-idle-timeout: invalid duration "soon" (want e.g. 10s, 1m30s)',
    );
    fails(['--auto-max-resources', '0'], '--auto-max-resources: invalid value "0" (want a positive integer)');
    // Issue 15 attack finding: 0 was accepted and every LIST started and stopped a cache.
    fails(['--auto-idle-timeout', '0'], '--auto-idle-timeout: want at least 1s, got 0');
    fails(['--auto-idle-timeout', '999ms'], '--auto-idle-timeout: want at least 1s, got 999ms');
    assert.throws(() => cfg([], { KCP_AUTO_IDLE_TIMEOUT: '500ms' }), {
      message: 'KCP_AUTO_IDLE_TIMEOUT: want at least 1s, got 500ms',
    });
    assert.equal(cfg(['--auto-idle-timeout', '1s']).autoIdleTimeout, 1_000);
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
    assert.deepEqual(c.resources, [{ name: 'pods' }, { name: 'deployments.apps' }]);
    assert.equal(c.namespace, 'fromflag');
    assert.deepEqual(c.listen, { host: '127.0.0.2', port: 9001 });
    assert.deepEqual(cfg(['--resources', 'pods, configmaps']).resources, [
      { name: 'pods' },
      { name: 'configmaps' },
    ]);
    assert.deepEqual(cfg(['--listen', '[::1]:8001']).listen, { host: '::1', port: 8001 });
  });

  it('scoped --resources: one syntax for flag, env and YAML list, $(VAR) expanded', () => {
    const env = { NODE_NAME: 'n1' };
    const want = [
      { name: 'pods', fieldSelector: 'spec.nodeName=n1' },
      { name: 'nodes', fieldSelector: 'metadata.name=n1' },
      { name: 'services' },
      { name: 'endpointslices.discovery.k8s.io' },
      { name: 'configmaps', fieldSelector: 'metadata.namespace=a', labelSelector: 'app in (x,y),tier' },
    ];
    const flag =
      'pods[fieldSelector=spec.nodeName=$(NODE_NAME)],nodes[fieldSelector=metadata.name=$(NODE_NAME)],services,endpointslices.discovery.k8s.io,configmaps[labelSelector=app in (x,y),tier;fieldSelector=metadata.namespace=a]';
    assert.deepEqual(cfg(['--resources', flag], env).resources, want);
    assert.deepEqual(cfg([], { ...env, KCP_RESOURCES: flag }).resources, want);
    const yaml = [
      'resources:',
      '  - pods[fieldSelector=spec.nodeName=$(NODE_NAME)]',
      '  - nodes[fieldSelector=metadata.name=$(NODE_NAME)]',
      '  - services',
      '  - endpointslices.discovery.k8s.io',
      "  - 'configmaps[labelSelector=app in (x,y),tier;fieldSelector=metadata.namespace=a]'",
      '',
    ].join('\n');
    assert.deepEqual(cfg(['--config', '/c.yaml'], env, { '/c.yaml': yaml }).resources, want);
    // $$ is a literal $ (as the kubelet's expansion); a multi-term field selector keeps its commas.
    assert.deepEqual(cfg(['--resources', 'secrets[fieldSelector=metadata.name=a$$b,type=x]']).resources, [
      { name: 'secrets', fieldSelector: 'metadata.name=a$b,type=x' },
    ]);
  });

  it('scoped --resources errors name the flag and the entry', () => {
    fails(
      ['--resources', 'pods[fieldSelector=spec.nodeName=$(NODE_NAME)]'],
      '--resources: environment variable NODE_NAME is not set',
    );
    fails([], 'KCP_RESOURCES: environment variable NODE_NAME is not set', {
      KCP_RESOURCES: 'pods[fieldSelector=spec.nodeName=$(NODE_NAME)]',
    });
    fails(
      ['--config', '/c.yaml'],
      '/c.yaml: resources: environment variable X is not set',
      {},
      { '/c.yaml': 'resources: ["pods[labelSelector=a=$(X)]"]\n' },
    );
    fails(
      ['--resources', 'pods[fieldSelector=spec.nodeName=n1'],
      /^--resources: unbalanced "\[" in "pods\[field/,
    );
    fails(['--resources', 'pods],services'], /^--resources: unbalanced "\]"/);
    fails(
      ['--resources', 'pods[labelSelector=a in (b]'],
      /^--resources: "pods\[labelSelector=a in \(b\]": invalid labelSelector: /,
    );
    fails(
      ['--resources', 'pods[fieldSelector=spec.nodeName]'],
      `--resources: "pods[fieldSelector=spec.nodeName]": invalid fieldSelector: invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'`,
    );
    fails(
      ['--resources', 'pods[nodeName=n1]'],
      '--resources: "pods[nodeName=n1]": unknown scope key "nodeName" (want fieldSelector or labelSelector)',
    );
    fails(['--resources', 'pods[]'], /^--resources: "pods\[\]": empty scope/);
    fails(
      ['--resources', 'pods[fieldSelector=]'],
      '--resources: "pods[fieldSelector=]": empty fieldSelector',
    );
    fails(
      ['--resources', 'pods[labelSelector=a;labelSelector=b]'],
      '--resources: "pods[labelSelector=a;labelSelector=b]": labelSelector given twice',
    );
    fails(
      ['--resources', 'pods[labelSelector=a]x'],
      /want one \[fieldSelector=…;labelSelector=…\] scope at the end/,
    );
    // Same resource twice (scoped or not): two scopes of one resource would need two caches.
    fails(['--resources', 'pods,configmaps,pods'], '--resources: resource "pods" given twice');
    fails(
      ['--resources', 'pods[fieldSelector=spec.nodeName=a],pods[fieldSelector=spec.nodeName=b]'],
      '--resources: resource "pods" given twice',
    );
  });

  it('one-line errors naming the flag, variable or file key', () => {
    fails(['--listen', 'nope'], '--listen: invalid address "nope" (want HOST:PORT)');
    fails([], 'KCP_CONSISTENT_READS: invalid value "maybe" (want one of cache, proven, upstream)', {
      KCP_CONSISTENT_READS: 'maybe',
    });
    fails(['--max-inflight', '0'], '--max-inflight: invalid value "0" (want a positive integer)');
    // A count may be 0; both kinds take decimal digits only.
    assert.equal(cfg(['--max-parked-watchers', '0']).maxParkedWatchers, 0);
    assert.equal(cfg([], { KCP_MAX_PARKED_WATCHERS: '7' }).maxParkedWatchers, 7);
    fails(
      ['--max-parked-watchers=-1'],
      '--max-parked-watchers: invalid value "-1" (want 0 or a positive integer)',
    );
    fails(['--max-watchers', '1e3'], '--max-watchers: invalid value "1e3" (want a positive integer)');
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

  it('refuses a non-loopback listen address without TLS and --delegated-auth, naming the missing flags', () => {
    fails(
      ['--listen', '0.0.0.0:8443'],
      '--listen 0.0.0.0:8443 is not a loopback address: it requires --tls-cert-file, --tls-private-key-file and --delegated-auth',
    );
    const tls = ['--tls-cert-file', '/c.pem', '--tls-private-key-file', '/k.pem'];
    fails(
      ['--listen', '[::]:8443', ...tls],
      '--listen [::]:8443 is not a loopback address: it requires --delegated-auth',
      {},
      { '/c.pem': '', '/k.pem': '' },
    );
    const c = cfg(
      ['--listen', '0.0.0.0:8443', ...tls, '--delegated-auth'],
      {},
      { '/c.pem': '', '/k.pem': '' },
    );
    assert.equal(c.delegatedAuth, true);
    assert.equal(c.tlsCertFile, '/c.pem');
    assert.deepEqual(cfg(['--listen', 'localhost:1']).listen, { host: 'localhost', port: 1 });
  });

  it('--authorization-outage-grace (default 0) requires --delegated-auth', () => {
    fails(['--authorization-outage-grace', '5m'], '--authorization-outage-grace requires --delegated-auth');
    fails([], 'KCP_AUTHORIZATION_OUTAGE_GRACE requires --delegated-auth', {
      KCP_AUTHORIZATION_OUTAGE_GRACE: '30s',
    });
    const tls = ['--tls-cert-file', '/c.pem', '--tls-private-key-file', '/k.pem'];
    const c = cfg(
      [...tls, '--delegated-auth', '--authorization-outage-grace', '5m'],
      {},
      { '/c.pem': '', '/k.pem': '' },
    );
    assert.equal(c.authorizationOutageGrace, 300_000);
    assert.equal(cfg(['--authorization-outage-grace', '0s']).authorizationOutageGrace, 0);
  });

  it('hostNetwork (flag, or POD_IP equal to HOST_IP) requires TLS and --delegated-auth', () => {
    fails(
      ['--host-network'],
      "--host-network: the pod's loopback is shared by every hostNetwork pod of the node: it requires --tls-cert-file, --tls-private-key-file and --delegated-auth",
    );
    fails(
      [],
      "POD_IP=HOST_IP=10.0.0.5 (hostNetwork): the pod's loopback is shared by every hostNetwork pod of the node: it requires --tls-cert-file, --tls-private-key-file and --delegated-auth",
      { POD_IP: '10.0.0.5', HOST_IP: '10.0.0.5' },
    );
    assert.equal(cfg([], { POD_IP: '10.0.0.5', HOST_IP: '10.0.0.6' }).hostNetwork, false);
  });

  it('TLS and auth flags need each other', () => {
    const files = { '/c.pem': '', '/k.pem': '', '/ca.pem': '' };
    fails(['--tls-cert-file', '/c.pem'], '--tls-cert-file requires --tls-private-key-file', {}, files);
    fails(['--delegated-auth'], '--delegated-auth requires --tls-cert-file and --tls-private-key-file');
    fails(
      ['--client-ca-file', '/ca.pem'],
      '--client-ca-file requires --tls-cert-file and --tls-private-key-file',
      {},
      files,
    );
    fails(['--tls-cert-file', '/none.pem'], '--tls-cert-file: no such file "/none.pem"');
  });

  it('durations, booleans and regexps parse as the apiserver flags do', () => {
    const c = cfg(['--authorization-webhook-cache-authorized-ttl', '1m30s'], {
      KCP_AUTHENTICATION_TOKEN_WEBHOOK_CACHE_TTL: '500ms',
      KCP_IMPERSONATE_CERTIFICATE_CLIENTS: 'True',
      KCP_ACCEPT_HOSTS: '^a$, ^b\\.c$',
    });
    assert.equal(c.authorizationWebhookCacheAuthorizedTtl, 90_000);
    assert.equal(c.authenticationTokenWebhookCacheTtl, 500);
    assert.equal(c.impersonateCertificateClients, true);
    assert.deepEqual(c.acceptHosts, ['^a$', '^b\\.c$']);
    assert.equal(cfg([], {}, { '/c.yaml': 'delegatedAuth: false\n' }, '/c.yaml').delegatedAuth, false);
    fails(
      ['--authorization-webhook-cache-unauthorized-ttl', '10'],
      '--authorization-webhook-cache-unauthorized-ttl: invalid duration "10" (want e.g. 10s, 1m30s)',
    );
    fails([], 'KCP_DELEGATED_AUTH: invalid value "yes" (want true or false)', { KCP_DELEGATED_AUTH: 'yes' });
    fails(['--accept-hosts', '('], /^--accept-hosts: invalid regular expression "\("/);
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
