import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ensureSnapshotDir, SnapshotDirError } from '../../../src/snapshot/snapshot-file.ts';

describe('ensureSnapshotDir', () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-snapdir-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('creates a missing directory (and its parents) with mode 0700', async () => {
    const dir = join(root, 'a', 'b');
    await ensureSnapshotDir(dir);
    const st = statSync(dir);
    assert.equal(st.isDirectory(), true);
    assert.equal(st.mode & 0o777, 0o700);
  });

  it('a regular file by that name is one line naming --snapshot-dir and the path, not EEXIST from mkdir', async () => {
    const file = join(root, 'file');
    writeFileSync(file, 'x');
    await assert.rejects(ensureSnapshotDir(file), (err: Error) => {
      assert.ok(err instanceof SnapshotDirError);
      assert.equal(err.message, `--snapshot-dir ${file}: not a directory`);
      return true;
    });
  });

  it('a file on the way is one line naming --snapshot-dir, the path and the code', async () => {
    const file = join(root, 'file2');
    writeFileSync(file, 'x');
    const dir = join(file, 'snapshots');
    await assert.rejects(ensureSnapshotDir(dir), (err: Error) => {
      assert.ok(err instanceof SnapshotDirError);
      assert.equal(err.message, `--snapshot-dir ${dir}: cannot create: ENOTDIR`);
      return true;
    });
  });
});
