/**
 * Cases marked `attack:` are operator-side inputs found by attacking `--snapshot-dir` (a planted
 * symbolic link, files that are not regular files).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  ensureSnapshotDir,
  readSnapshotFile,
  SnapshotDirError,
} from '../../../src/snapshot/snapshot-file.ts';

async function scratch(): Promise<string> {
  return fs.mkdtemp(join(tmpdir(), 'kcp-snapfile-'));
}

describe('ensureSnapshotDir', () => {
  it('attack: refuses a symbolic link (planted in a shared /tmp) and leaves its target alone', async () => {
    const root = await scratch();
    const victim = join(root, 'victim');
    await fs.mkdir(victim, { mode: 0o755 });
    await fs.chmod(victim, 0o755);
    await fs.writeFile(join(victim, 'keep'), 'x');
    const link = join(root, 'snapshots');
    await fs.symlink(victim, link);
    await assert.rejects(ensureSnapshotDir(link), (err: Error) => {
      assert.ok(err instanceof SnapshotDirError);
      assert.equal(err.message, `--snapshot-dir ${link}: a symbolic link; give the directory itself`);
      return true;
    });
    assert.equal((await fs.stat(victim)).mode & 0o777, 0o755);
    assert.deepEqual(await fs.readdir(victim), ['keep']);
  });

  it('creates a missing directory 0700 and tightens an existing one of the proxy user to 0700', async () => {
    const root = await scratch();
    await ensureSnapshotDir(join(root, 'new'));
    assert.equal((await fs.stat(join(root, 'new'))).mode & 0o777, 0o700);
    await fs.mkdir(join(root, 'open'));
    await fs.chmod(join(root, 'open'), 0o777);
    await ensureSnapshotDir(join(root, 'open'));
    assert.equal((await fs.stat(join(root, 'open'))).mode & 0o777, 0o700);
  });
});

describe('readSnapshotFile', () => {
  it('reads a 0600 regular file of the proxy user; undefined when absent', async () => {
    const dir = await scratch();
    await fs.writeFile(join(dir, 'a.snap'), 'bytes', { mode: 0o600 });
    assert.equal((await readSnapshotFile(dir, 'a.snap'))?.toString(), 'bytes');
    assert.equal(await readSnapshotFile(dir, 'b.snap'), undefined);
  });

  it('attack: refuses a symbolic link to a 0600 file of the proxy user', async () => {
    const dir = await scratch();
    await fs.writeFile(join(dir, 'secret'), 'not a snapshot', { mode: 0o600 });
    await fs.symlink(join(dir, 'secret'), join(dir, 'a.snap'));
    await assert.rejects(readSnapshotFile(dir, 'a.snap'), SnapshotDirError);
  });

  it('attack: refuses a FIFO without waiting for a writer', async () => {
    const dir = await scratch();
    execFileSync('mkfifo', ['-m', '600', join(dir, 'a.snap')]);
    await assert.rejects(readSnapshotFile(dir, 'a.snap'), /not a regular file/);
  });
});
