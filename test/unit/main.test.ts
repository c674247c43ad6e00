import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXIT_CONFIG, EXIT_OK, main } from '../../src/main.ts';
import { version, versionLine } from '../../src/util/build-info.ts';

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
});
