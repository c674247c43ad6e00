/**
 * Cases marked `attack:` are operator-side inputs found by attacking `--snapshot-dir` (a planted
 * symbolic link, files that are not regular files, a huge file of zeros).
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
import {
  checkSnapshotPrefix,
  SNAPSHOT_PREFIX_BYTES,
  SnapshotFormatError,
} from '../../../src/snapshot/snapshot-format.ts';

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
  it('a regular file by that name is one line naming --snapshot-dir and the path, not EEXIST from mkdir', async () => {
    const file = join(await scratch(), 'file');
    await fs.writeFile(file, 'x');
    await assert.rejects(ensureSnapshotDir(file), (err: Error) => {
      assert.ok(err instanceof SnapshotDirError);
      assert.equal(err.message, `--snapshot-dir ${file}: not a directory`);
      return true;
    });
  });

  it('a file on the way is one line naming --snapshot-dir, the path and the code', async () => {
    const file = join(await scratch(), 'file2');
    await fs.writeFile(file, 'x');
    const dir = join(file, 'snapshots');
    await assert.rejects(ensureSnapshotDir(dir), (err: Error) => {
      assert.ok(err instanceof SnapshotDirError);
      assert.equal(err.message, `--snapshot-dir ${dir}: cannot create: ENOTDIR`);
      return true;
    });
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

describe('readSnapshotFile with a prefix check', () => {
  it('attack: a 1 GiB file of zeros is refused after its first 12 bytes, never read whole', async () => {
    // Before: the whole file was read (700 MB sparse file: start RSS 857 MB, ~30 s on a loaded
    // machine), enough to OOM-kill a 320Mi node-local pod on every start while the file stays.
    const dir = await scratch();
    const fh = await fs.open(join(dir, 'a.snap'), 'w', 0o600);
    await fh.truncate(1 << 30);
    await fh.close();
    const seen: number[] = [];
    await assert.rejects(
      readSnapshotFile(dir, 'a.snap', {
        bytes: SNAPSHOT_PREFIX_BYTES,
        check: (head) => {
          seen.push(head.length);
          checkSnapshotPrefix(head);
        },
      }),
      (err: Error) => err instanceof SnapshotFormatError && err.fault === 'corrupt',
    );
    assert.deepEqual(seen, [12]);
  });

  it('a file shorter than the prefix is given to the check as it is (truncated)', async () => {
    const dir = await scratch();
    await fs.writeFile(join(dir, 'a.snap'), 'KCP', { mode: 0o600 });
    await assert.rejects(
      readSnapshotFile(dir, 'a.snap', { bytes: SNAPSHOT_PREFIX_BYTES, check: checkSnapshotPrefix }),
      (err: Error) => err instanceof SnapshotFormatError && err.fault === 'truncated',
    );
  });
});
