/**
 * kubectl as a drop-in: the same commands with a kubeconfig whose `server:` is the proxy
 * (plain HTTP on loopback, the fixture's admin bearer token) and with the fixture's own
 * kubeconfig must print the same thing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { type PassthroughProxy, startProxy } from '../support/proxy.ts';

describe('kubectl through the proxy', () => {
  let f: Fixture;
  let proxy: PassthroughProxy;
  let viaProxy: string;
  let ns: string;
  before(async () => {
    f = await sharedFixture();
    proxy = await startProxy(f, { run: 'passthrough' });
    ns = await f.newNamespace('kubectl');
    viaProxy = proxy.kubeconfig;
  });
  after(async () => {
    await proxy.stop();
  });

  const both = async (args: string[], input?: string) => {
    const d = await f.kubectl(
      args,
      input !== undefined
        ? { input, kubeconfig: f.kubeconfigs.adminToken }
        : { kubeconfig: f.kubeconfigs.adminToken },
    );
    const p = await f.kubectl(
      args,
      input !== undefined ? { input, kubeconfig: viaProxy } : { kubeconfig: viaProxy },
    );
    return { d, p };
  };

  test('version and api-resources print the same', async () => {
    const v = await both(['version', '-o', 'json']);
    assert.equal(v.p.code, 0, v.p.stderr);
    assert.deepEqual(JSON.parse(v.p.stdout).serverVersion, JSON.parse(v.d.stdout).serverVersion);
    // Other e2e files create and delete CRDs on the shared fixture (CI saw a test CRD's
    // `widgets` appear between the two calls): compare when discovery did not change around the
    // proxy's call (direct before = direct after), up to 5 tries.
    for (let i = 0; ; i++) {
      const r = await both(['api-resources']);
      assert.equal(r.p.code, 0, r.p.stderr);
      const again = await f.kubectl(['api-resources'], { kubeconfig: f.kubeconfigs.adminToken });
      if (again.stdout !== r.d.stdout && i < 4) continue;
      assert.equal(r.p.stdout, r.d.stdout);
      break;
    }
  });

  test('apply, get -o yaml, three patch types, get, delete', async () => {
    const cm = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'one', namespace: ns },
      data: { a: '1' },
    };
    const applied = await f.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify(cm),
      kubeconfig: viaProxy,
    });
    assert.equal(applied.code, 0, applied.stderr);
    assert.equal(applied.stdout, 'configmap/one created\n');

    const y = await both(['get', '-n', ns, 'configmap', 'one', '-o', 'yaml']);
    assert.equal(y.p.code, 0, y.p.stderr);
    assert.equal(y.p.stdout, y.d.stdout);

    const patches: [string, string, Record<string, string>][] = [
      ['strategic', '{"data":{"b":"2"}}', { a: '1', b: '2' }],
      ['merge', '{"data":{"a":null}}', { b: '2' }],
      ['json', '[{"op":"add","path":"/data/c","value":"3"}]', { b: '2', c: '3' }],
    ];
    for (const [type, patch, data] of patches) {
      const r = await f.kubectl(['patch', '-n', ns, 'configmap', 'one', '--type', type, '-p', patch], {
        kubeconfig: viaProxy,
      });
      assert.equal(r.code, 0, `${type}: ${r.stderr}`);
      assert.equal(r.stdout, 'configmap/one patched\n');
      const got = await f.kubectl(['get', '-n', ns, 'configmap', 'one', '-o', 'json']);
      assert.deepEqual(JSON.parse(got.stdout).data, data, type);
    }

    const g = await both(['get', '-n', ns, 'configmaps', '-o', 'name']);
    assert.equal(g.p.stdout, g.d.stdout);
    const t = await both([
      'get',
      '-n',
      ns,
      'configmap',
      'one',
      '--no-headers',
      '-o',
      'custom-columns=N:.metadata.name,D:.data',
    ]);
    assert.equal(t.p.stdout, t.d.stdout);

    const del = await f.kubectl(['delete', '-n', ns, 'configmap', 'one'], { kubeconfig: viaProxy });
    assert.equal(del.code, 0, del.stderr);
    assert.equal(del.stdout, `configmap "one" deleted from ${ns} namespace\n`);
    const gone = await both(['get', '-n', ns, 'configmap', 'one']);
    assert.equal(gone.p.code, 1);
    assert.equal(gone.p.stderr, gone.d.stderr);
  });

  test('exec/attach/port-forward of a missing pod: the same error as direct (the upgrade is tunnelled)', async () => {
    for (const args of [
      ['exec', '-n', ns, 'nope', '--', 'ls'],
      ['attach', '-n', ns, 'nope'],
      ['port-forward', '-n', ns, 'pod/nope', '0:80'],
    ]) {
      const { d, p } = await both(args);
      assert.equal(p.code, d.code, args.join(' '));
      assert.equal(p.stderr, d.stderr, args.join(' '));
      assert.match(p.stderr, /pods "nope" not found/);
    }
  });
});
