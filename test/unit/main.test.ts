import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config.ts';
import { createParts, EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, main } from '../../src/main.ts';
import { version, versionLine } from '../../src/util/build-info.ts';
import { logLines } from '../support/log-lines.ts';

function io() {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: {
      stdout: (s: string) => {
        out.stdout += s;
      },
      stderr: (s: string) => {
        out.stderr += s;
      },
    },
  };
}

describe('main', () => {
  it('--version prints the package version and the git revision, exit 0', async () => {
    const { out, io: x } = io();
    assert.equal(await main(['--version'], {}, x), EXIT_OK);
    assert.equal(out.stdout, `${versionLine()}\n`);
    assert.match(out.stdout, /^kube-cache-proxy \d+\.\d+\.\d+ \(revision [0-9a-f]{40}(-dirty)?\)\n$/);
    assert.match(version(), /^\d+\.\d+\.\d+/);
  });

  it('a bad flag is one line on stderr naming it, exit 2', async () => {
    const { out, io: x } = io();
    assert.equal(await main(['--consistent-reads', 'sometimes'], {}, x), EXIT_CONFIG);
    assert.equal(
      out.stderr,
      'kube-cache-proxy: --consistent-reads: invalid value "sometimes" (want one of cache, proven, upstream)\n',
    );
    assert.equal(out.stdout, '');
  });

  it('issue 30: an audit policy file that does not load is one line naming the flag and file, exit 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kcp-main-'));
    try {
      const policy = join(dir, 'policy.yaml');
      writeFileSync(policy, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]\n');
      const { out, io: x } = io();
      assert.equal(await main(['--audit-policy-file', policy, '--audit-log-path', '-'], {}, x), EXIT_CONFIG);
      assert.equal(
        out.stderr,
        `kube-cache-proxy: --audit-policy-file ${policy}: rules[0].level: Unsupported value: "Loud": supported values: "None", "Metadata", "Request", "RequestResponse"\n`,
      );
      const missing = io();
      assert.equal(await main(['--audit-policy-file', join(dir, 'nope.yaml')], {}, missing.io), EXIT_CONFIG);
      assert.equal(
        missing.out.stderr,
        `kube-cache-proxy: --audit-policy-file ${join(dir, 'nope.yaml')}: cannot read: ENOENT\n`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("-h is --help, as for every Kubernetes component (was: Unknown option '-h', exit 2)", async () => {
    const short = io();
    const long = io();
    assert.equal(await main(['-h'], {}, short.io), EXIT_OK);
    assert.equal(await main(['--help'], {}, long.io), EXIT_OK);
    assert.equal(short.out.stdout, long.out.stdout);
    assert.match(short.out.stdout, /^Usage: kube-cache-proxy \[flags\]\n/);
    assert.equal(short.out.stderr, '');
  });

  it('--help lists every flag', async () => {
    const { out, io: x } = io();
    assert.equal(await main(['--help'], {}, x), EXIT_OK);
    for (const f of [
      '--kubeconfig',
      '--resources',
      '--namespace',
      '--listen',
      '--ops-listen',
      '--consistent-reads',
      '--config',
      '--log-level',
    ]) {
      assert.ok(out.stdout.includes(`${f} `), f);
    }
  });

  // User trial: a failed start said `listen EADDRINUSE: address already in use 127.0.0.1:8001`
  // (which of the two listeners?), `EISDIR: illegal operation on a directory, read`, a YAML
  // excerpt over five lines, or `EEXIST: file already exists, mkdir '…'`: none named its flag or
  // file. Each is now one line on stderr naming it, exit 1.
  describe('a failed start is one line naming the flag or the file, exit 1', () => {
    const kubeconfig = (dir: string) => {
      const file = join(dir, 'kubeconfig');
      writeFileSync(
        file,
        'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
      );
      return file;
    };
    const busyPort = async (): Promise<{ server: Server; port: number }> => {
      const server = createServer();
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return { server, port: (server.address() as { port: number }).port };
    };
    const start = async (args: string[]) => {
      const { out, io: x } = io();
      const code = await main([...args, '--resources', '', '--log-level', 'silent'], {}, x);
      return { code, stderr: out.stderr };
    };

    it('--listen and --ops-listen on a port in use name their flag and address', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'kcp-main-'));
      const busy = await busyPort();
      try {
        const kc = kubeconfig(dir);
        const api = await start([
          '--kubeconfig',
          kc,
          '--listen',
          `127.0.0.1:${busy.port}`,
          '--ops-listen',
          '127.0.0.1:0',
        ]);
        assert.equal(api.code, EXIT_FAILURE);
        assert.equal(
          api.stderr,
          `kube-cache-proxy: --listen 127.0.0.1:${busy.port}: listen EADDRINUSE: address already in use 127.0.0.1:${busy.port}\n`,
        );
        const ops = await start([
          '--kubeconfig',
          kc,
          '--listen',
          '127.0.0.1:0',
          '--ops-listen',
          `127.0.0.1:${busy.port}`,
        ]);
        assert.equal(ops.code, EXIT_FAILURE);
        assert.equal(
          ops.stderr,
          `kube-cache-proxy: --ops-listen 127.0.0.1:${busy.port}: listen EADDRINUSE: address already in use 127.0.0.1:${busy.port}\n`,
        );
      } finally {
        busy.server.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('a --kubeconfig that is a directory or not YAML names the file, on one line', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'kcp-main-'));
      try {
        const isDir = await start([
          '--kubeconfig',
          dir,
          '--listen',
          '127.0.0.1:0',
          '--ops-listen',
          '127.0.0.1:0',
        ]);
        assert.equal(isDir.code, EXIT_FAILURE);
        assert.equal(isDir.stderr, `kube-cache-proxy: kubeconfig ${dir}: cannot read: EISDIR\n`);
        const bad = join(dir, 'bad.yaml');
        writeFileSync(bad, 'garbage: [\n');
        const notYaml = await start([
          '--kubeconfig',
          bad,
          '--listen',
          '127.0.0.1:0',
          '--ops-listen',
          '127.0.0.1:0',
        ]);
        assert.equal(notYaml.code, EXIT_FAILURE);
        assert.match(
          notYaml.stderr,
          new RegExp(`^kube-cache-proxy: kubeconfig ${bad}: invalid YAML: [^\n]*line 2, column 1[^\n]*\n$`),
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('a --snapshot-dir that is a file names the flag and the path', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'kcp-main-'));
      try {
        const file = join(dir, 'file');
        writeFileSync(file, 'x');
        const r = await start([
          '--kubeconfig',
          kubeconfig(dir),
          '--listen',
          '127.0.0.1:0',
          '--ops-listen',
          '127.0.0.1:0',
          '--snapshot-dir',
          file,
        ]);
        assert.equal(r.code, EXIT_FAILURE);
        assert.equal(r.stderr, `kube-cache-proxy: --snapshot-dir ${file}: not a directory\n`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  // User trial: `--resources=auto --snapshot-dir D` saved nothing (on-demand caches are never
  // saved) and said nothing; a restart relisted everything.
  it('--snapshot-dir with no configured resource warns that nothing will be saved; with one it does not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kcp-main-'));
    try {
      const kc = join(dir, 'kubeconfig');
      writeFileSync(
        kc,
        'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
      );
      const warnings = async (resources: string) => {
        const { logger, lines } = logLines<{ level: number; msg: string; snapshotDir?: string }>('warn');
        const r = loadConfig({
          argv: ['--kubeconfig', kc, '--resources', resources, '--snapshot-dir', join(dir, 'snap')],
          env: {},
        });
        assert.equal(r.kind, 'config');
        if (r.kind !== 'config') return [];
        const parts = await createParts(r.config, logger);
        await parts.close();
        return lines.filter((l) => l.level === 40 && l.msg.startsWith('--snapshot-dir'));
      };
      const auto = await warnings('auto');
      assert.deepEqual(
        auto.map((l) => [l.msg, l.snapshotDir]),
        [
          [
            '--snapshot-dir saves only the resources named in --resources; on-demand caches (--resources=auto) are not saved, so nothing will be',
            join(dir, 'snap'),
          ],
        ],
      );
      assert.deepEqual(await warnings('auto,configmaps'), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
