/**
 * Certificate rotation on the main listener (the apiserver's dynamic certificate controllers:
 * file watch + periodic re-read): the serving certificate and key, mounted as a Kubernetes volume
 * does it (files behind a `..data` symlink swapped atomically), are replaced by a new pair signed
 * by the same CA; a new TLS connection gets the new certificate, an open watch on an old
 * connection keeps streaming, the expiry metric follows. A malformed new pair keeps the one in use
 * (logged, naming the file). A client CA bundle that gains a second CA admits a client certificate
 * of that CA.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect } from 'node:tls';
import { Agent, request } from 'undici';
import { type CertFiles, mintCa, signCertificate } from '../fixture/certs.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { type CliProcess, spawnProxyCli } from '../support/proxy.ts';
import { SecretVolume } from '../support/secret-volume.ts';

describe('certificate rotation (--tls-cert-file, --tls-private-key-file, --client-ca-file)', () => {
  let f: Fixture;
  let dir: string;
  let proxy: CliProcess;
  let url: URL;
  let ops: string;
  let agent: Agent;
  /** The mounted Secret the proxy reads its certificates from. */
  let mount: SecretVolume;
  /** The fixture's CA, which signs the rotated pairs. */
  const fixtureCa = (): CertFiles => ({ cert: join(f.dir, 'ca.crt'), key: join(f.dir, 'ca.key') });

  /** A pair signed by `ca` (default the fixture CA), valid `days`, as PEM text. */
  async function pair(
    name: string,
    usage: 'server' | 'client',
    days: number,
    ca = fixtureCa(),
  ): Promise<{ cert: string; key: string }> {
    const subject = usage === 'server' ? `/CN=${name}` : `/O=system:masters/CN=${name}`;
    const p = await signCertificate(dir, { name, subject, ca, usage, days });
    return { cert: await readFile(p.cert, 'utf8'), key: await readFile(p.key, 'utf8') };
  }

  /** CN of the certificate a NEW TLS connection to the proxy gets. */
  function servedCN(): Promise<string> {
    return new Promise((resolve, reject) => {
      const s = connect(
        { host: '127.0.0.1', port: Number(url.port), ca: f.caPem, servername: 'localhost' },
        () => {
          const cn = s.getPeerCertificate().subject.CN;
          s.end();
          resolve(String(cn));
        },
      );
      s.on('error', reject);
    });
  }

  let files: Record<string, string>;
  before(async () => {
    f = await sharedFixture();
    dir = await mkdtemp(join(tmpdir(), 'kcp-rotation-'));
    const first = await pair('kcp-serving-1', 'server', 3650);
    files = { 'tls.crt': first.cert, 'tls.key': first.key, 'ca.crt': f.caPem };
    mount = new SecretVolume(join(dir, 'mount'));
    await mount.publish(files);
    const m = (n: string) => mount.path(n);
    proxy = spawnProxyCli([
      '--kubeconfig',
      f.kubeconfigs.adminToken,
      '--resources',
      'configmaps',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
      '--tls-cert-file',
      m('tls.crt'),
      '--tls-private-key-file',
      m('tls.key'),
      '--client-ca-file',
      m('ca.crt'),
      '--delegated-auth',
      '--cert-reload-interval',
      '1s',
    ]);
    const l = await proxy.listening();
    url = new URL(l.address);
    ops = l.ops;
    agent = new Agent({ connect: { ca: f.caPem, servername: 'localhost' } });
    await eventually('ready', 60_000, async () =>
      (await request(`${ops}/readyz`)).statusCode === 200 ? 1 : undefined,
    );
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const expiryMetric = async () => {
    const text = await (await request(`${ops}/metrics`)).body.text();
    const m = /^kube_cache_proxy_serving_certificate_expiry_timestamp_seconds (\S+)$/m.exec(text);
    return m ? Number(m[1]) : undefined;
  };

  test('a rotated serving pair: new connections get it, an open watch keeps streaming, the expiry metric follows', async () => {
    const ns = await f.newNamespace('rotate');
    assert.equal(await servedCN(), 'kcp-serving-1');
    const expiry1 = await expiryMetric();
    assert.ok(expiry1 && expiry1 * 1000 > Date.now() + 3000 * 86400_000, `expiry ${expiry1}`);
    // A watch on a connection opened with the first certificate.
    const list = await request(`${url.origin}/api/v1/namespaces/${ns}/configmaps`, {
      dispatcher: agent,
      headers: { authorization: `Bearer ${f.tokens.admin}` },
    });
    assert.equal(list.statusCode, 200);
    const rv = (JSON.parse(await list.body.text()) as { metadata: { resourceVersion: string } }).metadata
      .resourceVersion;
    const watch = await request(
      `${url.origin}/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=${rv}`,
      {
        dispatcher: agent,
        headers: { authorization: `Bearer ${f.tokens.admin}` },
      },
    );
    assert.equal(watch.statusCode, 200);
    let seen = '';
    const reading = (async () => {
      for await (const chunk of watch.body) seen += String(chunk);
    })().catch(() => {});

    const second = await pair('kcp-serving-2', 'server', 30);
    await mount.publish({ ...files, 'tls.crt': second.cert, 'tls.key': second.key });
    await eventually('a new connection gets the rotated certificate', 20_000, async () =>
      (await servedCN()) === 'kcp-serving-2' ? true : undefined,
    );
    const expiry2 = await expiryMetric();
    assert.ok(
      expiry2 && Math.abs(expiry2 * 1000 - (Date.now() + 30 * 86400_000)) < 86400_000,
      `expiry ${expiry2}`,
    );
    files = { ...files, 'tls.crt': second.cert, 'tls.key': second.key };

    // The watch opened before the rotation still streams.
    const c = await f.kubectl(['create', 'configmap', 'after-rotation', '-n', ns, '--from-literal=k=v']);
    assert.equal(c.code, 0, c.stderr);
    await eventually('the open watch sees the new object', 20_000, async () =>
      seen.includes('"name":"after-rotation"') ? true : undefined,
    );
    watch.body.destroy();
    await reading;
  });

  test('a malformed new pair keeps the one in use and logs why, naming the file', async () => {
    const before = await servedCN();
    const third = await pair('kcp-serving-3', 'server', 30);
    // A key of another pair: both files parse, they do not match.
    await mount.publish({ ...files, 'tls.crt': third.cert });
    const keyFile = mount.path('tls.key');
    await eventually('the refusal is logged', 20_000, async () =>
      proxy
        .logs()
        .find(
          (l) =>
            typeof l.msg === 'string' &&
            l.msg.startsWith('serving certificate not reloaded, the one in use is kept:') &&
            l.msg.includes(
              `${keyFile}: private key does not match the certificate in ${mount.path('tls.crt')}`,
            ),
        ),
    );
    assert.equal(await servedCN(), before);
    await mount.publish({
      ...files,
      'tls.crt': '-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n',
    });
    await eventually('the unparsable certificate is logged', 20_000, async () =>
      proxy
        .logs()
        .find(
          (l) =>
            typeof l.msg === 'string' &&
            l.msg.includes(`${mount.path('tls.crt')}: certificate 1 does not parse`),
        ),
    );
    assert.equal(await servedCN(), before);
    const warnLines = proxy
      .logs()
      .filter((l) => typeof l.msg === 'string' && l.msg.startsWith('serving certificate not reloaded'));
    assert.equal(warnLines.length, 2, 'each bad state logged once, not every re-read');
    await mount.publish(files);
  });

  test('a client CA bundle that gains a CA admits a client certificate of that CA', async () => {
    const ca2 = await mintCa(dir, 'ca2', '/CN=kcp-rotated-ca', 30);
    const user2 = await signCertificate(dir, {
      name: 'user2',
      subject: '/O=system:masters/CN=kcp-rotated-user',
      ca: ca2,
      usage: 'client',
      days: 30,
    });
    const clientAgent = new Agent({
      connect: {
        ca: f.caPem,
        servername: 'localhost',
        cert: await readFile(user2.cert),
        key: await readFile(user2.key),
      },
      // A new TLS handshake per request: the CA is checked at the handshake.
      pipelining: 0,
    });
    try {
      const get = async () => {
        const r = await request(`${url.origin}/api/v1/namespaces/default/configmaps?resourceVersion=0`, {
          dispatcher: clientAgent,
          headers: { connection: 'close' },
        });
        await r.body.text();
        return r.statusCode;
      };
      assert.equal(await get(), 401, 'a certificate of an unknown CA is not authenticated');
      await mount.publish({
        ...files,
        'ca.crt': `${f.caPem.trimEnd()}\n${await readFile(ca2.cert, 'utf8')}`,
      });
      await eventually('the new CA admits its client certificate', 20_000, async () =>
        (await get()) === 200 ? true : undefined,
      );
    } finally {
      await clientAgent.close();
    }
  });
  test("the proxy's own upstream client certificate files: new connections present the rotated one, the cache keeps streaming", async () => {
    const clientPair = async (name: string) => {
      const p = await pair(name, 'client', 30);
      return { 'client.crt': p.cert, 'client.key': p.key };
    };
    files = { ...files, ...(await clientPair('kcp-upstream-1')) };
    await mount.publish(files);
    const kc = join(dir, 'client-cert.kubeconfig');
    await writeFile(
      kc,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'c', cluster: { server: f.server, 'certificate-authority': join(f.dir, 'ca.crt') } },
        ],
        users: [
          {
            name: 'u',
            user: {
              'client-certificate': mount.path('client.crt'),
              'client-key': mount.path('client.key'),
            },
          },
        ],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    const p = spawnProxyCli([
      '--kubeconfig',
      kc,
      '--resources',
      'configmaps',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
      '--cert-reload-interval',
      '1s',
    ]);
    try {
      const l = await p.listening();
      const ns = await f.newNamespace('upcert');
      // Who the apiserver sees on a new connection: a SelfSubjectReview sent through the proxy
      // without a credential goes upstream with the proxy's.
      const whoami = async () => {
        const r = await request(`${l.address}/apis/authentication.k8s.io/v1/selfsubjectreviews`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
        });
        const text = await r.body.text();
        assert.equal(r.statusCode, 201, text);
        return (JSON.parse(text) as { status: { userInfo: { username: string } } }).status.userInfo.username;
      };
      await eventually('ready', 60_000, async () =>
        (await request(`${l.ops}/readyz`)).statusCode === 200 ? 1 : undefined,
      );
      assert.equal(await whoami(), 'kcp-upstream-1');
      files = { ...files, ...(await clientPair('kcp-upstream-2')) };
      await mount.publish(files);
      await eventually('new connections present the rotated certificate', 20_000, async () =>
        (await whoami()) === 'kcp-upstream-2' ? true : undefined,
      );
      assert.ok(p.logs().some((x) => x.msg === 'upstream client certificate reloaded'));
      // The reflector's watch, opened with the first certificate, still streams into the cache.
      const c = await f.kubectl([
        'create',
        'configmap',
        'after-client-rotation',
        '-n',
        ns,
        '--from-literal=k=v',
      ]);
      assert.equal(c.code, 0, c.stderr);
      await eventually('the cache gets the new object', 20_000, async () => {
        const r = await request(`${l.address}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`);
        const body = await r.body.text();
        return r.statusCode === 200 && body.includes('"name":"after-client-rotation"') ? true : undefined;
      });
      const restarts = JSON.parse(await (await request(`${l.ops}/debug/cache`)).body.text()) as {
        resources: Array<{ watchRestarts: number; relists: Record<string, number> }>;
      };
      assert.deepEqual(restarts.resources[0]!.relists, {}, 'no relist: the stream was not cut');
    } finally {
      await p.stop();
    }
  });
});
