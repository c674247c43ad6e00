/**
 * The kubectl matrix on the pods fixture (test/fixture/pods-fixture.ts: pods really run, on a
 * KWOK node): every command direct and through the proxy (`pods,configmaps,deployments.apps,
 * events` cached) prints the same, ages and generated names normalised. Writes run the same
 * sequence in two namespaces (one per side); reads and the exec family run side by side on the
 * same objects. exec/attach/port-forward go over WebSocket (kubectl's default) and over SPDY
 * (`KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`, `KUBECTL_PORT_FORWARD_WEBSOCKETS=false`).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { POD_LOG_LINES, type PodsFixture, startPodsFixture } from '../fixture/pods-fixture.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

interface Run {
  stdout: string;
  stderr: string;
  code: number;
}

const SPDY_ENV = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' };

describe('kubectl matrix on a fixture that runs pods: direct vs through the proxy', {
  timeout: 600_000,
}, () => {
  let f: PodsFixture;
  let proxy: InProcessProxy;
  /** kubeconfigs: d = direct, p = through the proxy (both the fixture's admin token). */
  const kc = { d: '', p: '' };
  /** The namespace of the side-by-side reads and the exec family. */
  let ns: string;

  const kubectl = (
    kubeconfig: string,
    args: string[],
    o: { input?: string; env?: Record<string, string> } = {},
  ) =>
    new Promise<Run>((resolve) => {
      const child = execFile(
        f.bin.kubectl,
        ['--kubeconfig', kubeconfig, ...args],
        { timeout: 90_000, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...o.env }, cwd: f.dir },
        (err, stdout, stderr) => {
          resolve({ stdout, stderr, code: err ? (typeof err.code === 'number' ? err.code : 1) : 0 });
        },
      );
      if (o.input !== undefined) child.stdin?.end(o.input);
    });
  /** The same command direct and through the proxy. */
  const both = async (args: string[], o: { input?: string; env?: Record<string, string> } = {}) => ({
    d: await kubectl(kc.d, args, o),
    p: await kubectl(kc.p, args, o),
  });
  const same = async (
    args: string[],
    o: { input?: string; env?: Record<string, string>; norm?: (s: string) => string } = {},
  ) => {
    const { d, p } = await both(args, o);
    const n = o.norm ?? ((s: string) => s);
    assert.equal(n(p.stderr), n(d.stderr), `stderr of kubectl ${args.join(' ')}`);
    assert.equal(n(p.stdout), n(d.stdout), `stdout of kubectl ${args.join(' ')}`);
    assert.equal(p.code, d.code, `exit code of kubectl ${args.join(' ')}`);
    return d;
  };
  /** Ages (`5s`, `2m3s`, `4m`) and event counts over time (`x2 over 3s`) vary between two runs. */
  const ages = (s: string) =>
    s
      .replace(/\b\d+m\d+s\b|\b\d+(?:\.\d+)?[smhd]\b/g, 'AGE')
      .replace(/\(x\d+ over AGE\)/g, '(xN over AGE)')
      .replace(/ +/g, ' ');

  before(async () => {
    f = await startPodsFixture({ verbose: true });
    // Without --delegated-auth exec and attach are refused by default (kubectl proxy's
    // --reject-paths): this matrix compares them with direct, so it lets them through.
    proxy = await startProxy(f, {
      resources: 'pods,configmaps,deployments.apps,events',
      args: ['--reject-paths', ''],
    });
    kc.d = f.kubeconfigs.adminToken;
    kc.p = proxy.kubeconfig;
    ns = await f.newNamespace('matrix');
    const made = await f.kubectl(['run', 'p', '-n', ns, '--image=busybox', '--labels=app=p']);
    assert.equal(made.code, 0, made.stderr);
    const ready = await f.kubectl(['wait', '-n', ns, '--for=condition=Ready', 'pod/p', '--timeout=60s']);
    assert.equal(ready.code, 0, ready.stderr);
  });
  after(async () => {
    await proxy?.stop();
    await f?.stop();
  });

  test('writes: apply (client and server side), diff, patch, label, annotate, scale, rollout, wait, delete', async () => {
    const sides = { d: await f.newNamespace('writes-d'), p: await f.newNamespace('writes-p') };
    const deployment = (image: string) =>
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', labels: { app: 'web' } },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image }] },
          },
        },
      });
    const configmap = JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cfg' },
      data: { a: '1' },
    });
    const steps: { args: string[]; input?: string; last?: boolean }[] = [
      { args: ['apply', '-f', '-'], input: deployment('busybox:1') },
      { args: ['apply', '--server-side', '-f', '-'], input: configmap },
      { args: ['wait', '--for=condition=Available', 'deployment/web', '--timeout=90s'] },
      // Progress lines depend on timing; the last line says how it ended.
      { args: ['rollout', 'status', 'deployment/web', '--timeout=90s'], last: true },
      { args: ['diff', '-f', '-'], input: deployment('busybox:2') },
      { args: ['apply', '-f', '-'], input: deployment('busybox:2') },
      { args: ['rollout', 'status', 'deployment/web', '--timeout=90s'], last: true },
      { args: ['rollout', 'history', 'deployment/web'] },
      { args: ['rollout', 'undo', 'deployment/web'] },
      { args: ['rollout', 'status', 'deployment/web', '--timeout=90s'], last: true },
      { args: ['rollout', 'restart', 'deployment/web'] },
      { args: ['rollout', 'status', 'deployment/web', '--timeout=90s'], last: true },
      { args: ['scale', 'deployment/web', '--replicas=3'] },
      { args: ['wait', '--for=jsonpath={.status.readyReplicas}=3', 'deployment/web', '--timeout=90s'] },
      { args: ['patch', 'configmap', 'cfg', '-p', '{"data":{"b":"2"}}'] },
      { args: ['patch', 'configmap', 'cfg', '--type=json', '-p', '[{"op":"remove","path":"/data/a"}]'] },
      { args: ['label', 'configmap', 'cfg', 'tier=test'] },
      { args: ['label', 'configmap', 'cfg', 'tier=prod'] },
      { args: ['annotate', 'configmap', 'cfg', 'note=hello'] },
      {
        args: [
          'get',
          'configmap',
          'cfg',
          '-o',
          'jsonpath={.data} {.metadata.labels} {.metadata.annotations.note}',
        ],
      },
      { args: ['apply', '--server-side', '-f', '-'], input: configmap.replace('"1"', '"9"') },
      { args: ['delete', 'configmap', 'cfg'] },
      { args: ['delete', 'deployment', 'web', '--wait=true'] },
      { args: ['wait', '--for=delete', 'pod', '-l', 'app=web', '--timeout=90s'] },
      { args: ['get', 'replicasets,pods', '-o', 'name'] },
    ];
    const norm = (side: 'd' | 'p', s: string) =>
      s
        .replaceAll(sides[side], 'NS')
        .replace(/\/tmp\/(LIVE|MERGED)-\d+/g, '/tmp/$1-N')
        .replace(/\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?( [+-]\d{4})?Z?/g, 'TIME')
        .replace(/(resourceVersion|uid): .*/g, '$1: X')
        .replace(/web-[a-z0-9]{8,10}(-[a-z0-9]{5})?/g, 'web-GENERATED');
    for (const step of steps) {
      const out = { d: { stdout: '', stderr: '', code: 0 }, p: { stdout: '', stderr: '', code: 0 } };
      for (const side of ['d', 'p'] as const) {
        const r = await kubectl(
          kc[side],
          ['-n', sides[side], ...step.args],
          step.input ? { input: step.input } : {},
        );
        const pick = (t: string) => (step.last ? (t.trim().split('\n').pop() ?? '') : t);
        out[side] = { stdout: pick(norm(side, r.stdout)), stderr: norm(side, r.stderr), code: r.code };
      }
      assert.deepEqual(out.p, out.d, `kubectl ${step.args.join(' ')}`);
    }
  });

  test('get: table, -o yaml/json/name/wide/jsonpath, api-resources, explain, auth can-i, top', async () => {
    await same(['get', 'pods', '-n', ns], { norm: ages });
    await same(['get', 'pods', '-n', ns, '-o', 'wide'], { norm: ages });
    await same(['get', 'pod', 'p', '-n', ns, '-o', 'yaml']);
    await same(['get', 'pods', '-n', ns, '-o', 'json']);
    await same(['get', 'pods,configmaps', '-n', ns, '-o', 'name']);
    await same([
      'get',
      'pods',
      '-n',
      ns,
      '-o',
      'jsonpath={.items[*].status.phase} {.items[*].spec.nodeName}',
    ]);
    await same(['get', 'nodes'], { norm: ages });
    await same(['api-resources']);
    await same(['explain', 'pods.spec.containers.ports']);
    await same(['auth', 'can-i', 'create', 'pods/exec', '-n', ns]);
    await same(['auth', 'can-i', '--list', '-n', ns]);
    // No metrics-server: the same error both ways.
    const top = await same(['top', 'pod', '-n', ns]);
    assert.notEqual(top.code, 0);
  });

  test('describe and events', async () => {
    await same(['describe', 'pod', 'p', '-n', ns], { norm: ages });
    await same(['events', '-n', ns], { norm: ages });
  });

  test('get -w: the same events, each side seeing the same write', async () => {
    const watch = (kubeconfig: string) => {
      const child = spawn(f.bin.kubectl, [
        '--kubeconfig',
        kubeconfig,
        'get',
        'configmaps',
        '-n',
        ns,
        '-w',
        '-o',
        'name',
      ]);
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      return { child, out: () => out };
    };
    const d = watch(kc.d);
    const p = watch(kc.p);
    try {
      await until(
        'both watches list kube-root-ca.crt',
        () => d.out().includes('kube-root-ca.crt') && p.out().includes('kube-root-ca.crt'),
      );
      await f.kubectl(['create', 'configmap', 'watched', '-n', ns]);
      await until(
        'both watches see the new configmap',
        () => d.out().includes('watched') && p.out().includes('watched'),
      );
      assert.equal(p.out(), d.out());
      assert.equal(d.out(), 'configmap/kube-root-ca.crt\nconfigmap/watched\n');
    } finally {
      d.child.kill();
      p.child.kill();
    }
  });

  test('logs, --tail, -f', async () => {
    const all = await same(['logs', 'p', '-n', ns]);
    assert.equal(all.stdout, `${POD_LOG_LINES.join('\n')}\n`);
    const tail = await same(['logs', 'p', '-n', ns, '--tail=1']);
    assert.equal(tail.stdout, `${POD_LOG_LINES.at(-1)}\n`);
    await same(['logs', 'p', '-n', ns, '--timestamps']);
    // -f never ends by itself (kwok follows the file): read until every line arrived.
    const follow = async (kubeconfig: string) => {
      const s = await streamUntil(
        f.bin.kubectl,
        ['--kubeconfig', kubeconfig, 'logs', '-f', 'p', '-n', ns],
        POD_LOG_LINES.at(-1)!,
      );
      return s;
    };
    assert.equal(await follow(kc.p), await follow(kc.d));
  });

  for (const [proto, env] of [
    ['WebSocket', {}],
    ['SPDY', SPDY_ENV],
  ] as const) {
    test(`exec (${proto}): output, stderr, exit code, stdin; a missing pod or container answers as direct`, async () => {
      const ok = await same(['exec', 'p', '-n', ns, '--', 'sh', '-c', 'pwd; echo to-stderr >&2'], { env });
      assert.deepEqual(ok, { stdout: `${f.workDir}\n`, stderr: 'to-stderr\n', code: 0 });
      // kwok reports a command's non-zero exit as an internal error (not as an exit code).
      const failed = await same(['exec', 'p', '-n', ns, '--', 'sh', '-c', 'exit 3'], { env });
      assert.notEqual(failed.code, 0);
      assert.match(failed.stderr, /exit status 3/);
      const big = `${'0123456789abcdef'.repeat(64 * 1024)}\n`; // 1 MiB through stdin and back
      const cat = await same(['exec', '-i', 'p', '-n', ns, '--', 'cat'], { env, input: big });
      assert.equal(cat.stdout, big);
      const wc = await same(['exec', '-i', 'p', '-n', ns, '--', 'wc', '-c'], { env, input: 'five\n' });
      assert.equal(wc.stdout.trim(), '5');
      const missing = await same(['exec', 'nope', '-n', ns, '--', 'true'], { env });
      assert.match(missing.stderr, /pods "nope" not found/);
      await same(['exec', 'p', '-c', 'nope', '-n', ns, '--', 'true'], { env });
    });

    test(`attach (${proto}): the lines written after attaching`, async () => {
      const attach = async (kubeconfig: string, line: string) => {
        const child = spawn(f.bin.kubectl, ['--kubeconfig', kubeconfig, 'attach', 'p', '-n', ns], {
          env: { ...process.env, ...env },
        });
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
        });
        try {
          // Written until it arrives: kwok starts following the file once the stream is up.
          await until(`attach shows ${line}`, () => {
            if (!out.includes(line)) void f.appendAttachLine(line);
            return out.includes(line);
          });
          return out.slice(out.indexOf(line), out.indexOf(line) + line.length);
        } finally {
          child.kill();
        }
      };
      assert.equal(await attach(kc.d, `${proto} direct`), `${proto} direct`);
      assert.equal(await attach(kc.p, `${proto} proxy`), `${proto} proxy`);
    });

    test(`port-forward (${proto}): a real byte stream through the forwarded port`, async () => {
      for (const kubeconfig of [kc.d, kc.p]) {
        const payload = Buffer.alloc(4 * 1024 * 1024);
        for (let i = 0; i < payload.length; i++) payload[i] = (i * 31) & 0xff;
        const echoed = await portForwardEcho(f.bin.kubectl, kubeconfig, ns, payload, env);
        assert.ok(
          echoed.equals(payload),
          `${kubeconfig === kc.p ? 'proxy' : 'direct'}: ${echoed.length} bytes back`,
        );
      }
    });
  }

  test('cp both ways (relative paths in the exec work directory)', async () => {
    await writeFile(join(f.dir, 'local.txt'), 'copied through kubectl cp\n');
    for (const side of ['d', 'p'] as const) {
      const up = await kubectl(kc[side], ['cp', 'local.txt', `${ns}/p:copied-${side}.txt`]);
      assert.equal(up.code, 0, up.stderr);
      assert.equal(
        await readFile(join(f.workDir, `copied-${side}.txt`), 'utf8'),
        'copied through kubectl cp\n',
      );
      const down = await kubectl(kc[side], ['cp', `${ns}/p:copied-${side}.txt`, `back-${side}.txt`]);
      assert.equal(down.code, 0, down.stderr);
      assert.equal(await readFile(join(f.dir, `back-${side}.txt`), 'utf8'), 'copied through kubectl cp\n');
      assert.deepEqual([up.stdout, up.stderr], ['', '']);
    }
  });

  test("the client's identity: a user who may only `get` pods/exec is refused the same both ways", async () => {
    const rbac = [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'reader', namespace: ns } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'reader', namespace: ns },
        rules: [
          { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get', 'list', 'watch'] },
          { apiGroups: [''], resources: ['pods/exec', 'pods/attach', 'pods/portforward'], verbs: ['get'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'reader', namespace: ns },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
      },
    ];
    const applied = await f.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rbac }),
    });
    assert.equal(applied.code, 0, applied.stderr);
    const token = (await f.kubectl(['create', 'token', 'reader', '-n', ns])).stdout.trim();
    // kubectl sends no bearer token to an http:// server (so through the plain-HTTP proxy a
    // kubeconfig's token is never used): the upgrade requests are sent raw, with the token.
    const exec = `/api/v1/namespaces/${ns}/pods/p/exec?command=true&stdout=true`;
    const upgrades: { method: string; headers: Record<string, string> }[] = [
      { method: 'POST', headers: { upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'v4.channel.k8s.io' } },
      {
        method: 'GET',
        headers: {
          upgrade: 'websocket',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
          'sec-websocket-version': '13',
          'sec-websocket-protocol': 'v5.channel.k8s.io',
        },
      },
    ];
    for (const upgrade of upgrades) {
      const headers = { ...upgrade.headers, connection: 'Upgrade', authorization: `Bearer ${token}` };
      const d = await rawUpgrade(`${f.server}${exec}`, upgrade.method, headers, f.caPem);
      const p = await rawUpgrade(`${proxy.url}${exec}`, upgrade.method, headers, f.caPem);
      assert.deepEqual(p, d);
      assert.equal(d.status, 403);
      // SPDY (POST) names the missing `create` on pods/exec; the WebSocket GET's message is cut
      // short by the apiserver ("pods \"p\" is forbidden: "): the same bytes both ways.
      assert.match(d.body, /"reason":"Forbidden"/);
    }
    // Since 1.35 WebSocket exec needs `create` on pods/exec (the fixture's limited user has `*`).
    const lns = f.limitedNamespace;
    const run = await f.kubectl(['run', 'lp', '-n', lns, '--image=busybox']);
    assert.equal(run.code, 0, run.stderr);
    await f.kubectl(['wait', '-n', lns, '--for=condition=Ready', 'pod/lp', '--timeout=60s']);
    const lexec = `/api/v1/namespaces/${lns}/pods/lp/exec?command=true&stdout=true`;
    const ws = {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
      'sec-websocket-protocol': 'v5.channel.k8s.io',
      authorization: `Bearer ${f.tokens.limited}`,
    };
    assert.equal((await rawUpgrade(`${f.server}${lexec}`, 'GET', ws, f.caPem)).status, 101);
    assert.equal((await rawUpgrade(`${proxy.url}${lexec}`, 'GET', ws, f.caPem)).status, 101);
  });
});

/** One raw upgrade request: its status, and its body when refused (the socket is closed). */
function rawUpgrade(
  url: string,
  method: string,
  headers: Record<string, string>,
  ca: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith('https:') ? httpsRequest : httpRequest)(url, {
      method,
      headers,
      ca,
      agent: false,
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '' });
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs a command that never ends by itself until its stdout contains `marker`; its stdout. */
async function streamUntil(
  bin: string,
  args: string[],
  marker: string,
  env: Record<string, string> = {},
): Promise<string> {
  const child = spawn(bin, args, { env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  try {
    await until(`${args.slice(2).join(' ')} shows ${marker} (stderr: ${err})`, () => out.includes(marker));
    return out;
  } finally {
    child.kill();
  }
}

/** `kubectl port-forward pod/p :80`, sends `payload` through the local port, returns what came back. */
async function portForwardEcho(
  bin: string,
  kubeconfig: string,
  ns: string,
  payload: Buffer,
  env: Record<string, string>,
): Promise<Buffer> {
  const child: ChildProcess = spawn(
    bin,
    ['--kubeconfig', kubeconfig, 'port-forward', '-n', ns, 'pod/p', ':80'],
    {
      env: { ...process.env, ...env },
    },
  );
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  try {
    await until('port-forward listening', () => /Forwarding from 127\.0\.0\.1:\d+/.test(out));
    const port = Number(/Forwarding from 127\.0\.0\.1:(\d+)/.exec(out)![1]);
    const s = connect({ host: '127.0.0.1', port });
    await once(s, 'connect');
    const chunks: Buffer[] = [];
    let n = 0;
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      n += d.length;
    });
    s.write(payload);
    await until('the echo came back', () => n >= payload.length, 60_000);
    s.destroy();
    return Buffer.concat(chunks);
  } finally {
    child.kill();
  }
}
