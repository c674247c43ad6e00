import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { backupName, RotatingFile } from '../../../src/audit/rotating-file.ts';

const MIB = 1024 * 1024;
const dirs: string[] = [];
const dir = () => {
  const d = mkdtempSync(join(tmpdir(), 'kcp-audit-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("audit log file (lumberjack's rotation)", () => {
  it('creates the file 0600 (parents 0700) and appends to what is there', () => {
    const d = dir();
    const path = join(d, 'sub', 'audit.log');
    const f = new RotatingFile({ path, maxSizeMiB: 0, maxBackups: 0, maxAgeDays: 0, compress: false });
    f.write(Buffer.from('a\n'));
    f.close();
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(join(d, 'sub')).mode & 0o777, 0o700);
    const g = new RotatingFile({ path, maxSizeMiB: 0, maxBackups: 0, maxAgeDays: 0, compress: false });
    g.write(Buffer.from('b\n'));
    g.close();
    assert.equal(readFileSync(path, 'utf8'), 'a\nb\n');
  });

  it('rotates before a write that would pass maxsize, names the backup by UTC time, keeps maxbackup', () => {
    const d = dir();
    const path = join(d, 'audit.log');
    let now = Date.parse('2026-12-06T09:00:00.000Z');
    const f = new RotatingFile({
      path,
      maxSizeMiB: 1,
      maxBackups: 2,
      maxAgeDays: 0,
      compress: false,
      now: () => now,
    });
    const half = Buffer.alloc(MIB / 2 + 1, 'x');
    for (let i = 0; i < 4; i++) {
      f.write(half);
      now += 1000;
    }
    f.close();
    // Each second write rotates: 4 writes of just over half a MiB = 3 rotations, 2 kept.
    assert.deepEqual(readdirSync(d).sort(), [
      'audit-2026-12-06T09-00-02.000.log',
      'audit-2026-12-06T09-00-03.000.log',
      'audit.log',
    ]);
    assert.equal(statSync(path).size, half.length);
    assert.throws(
      () => f.write(Buffer.alloc(MIB + 1)),
      /^Error: write length 1048577 exceeds maximum file size 1048576$/,
    );
  });

  it('removes backups older than maxage days (by the time in their name) and gzips the others with compress', () => {
    const d = dir();
    const path = join(d, 'audit.log');
    const now = Date.parse('2026-12-06T09:00:00.000Z');
    writeFileSync(backupName(path, now - 3 * 24 * 3600 * 1000), 'old\n');
    writeFileSync(backupName(path, now - 3600 * 1000), 'recent\n');
    writeFileSync(join(d, 'unrelated.log'), 'x');
    const f = new RotatingFile({
      path,
      maxSizeMiB: 1,
      maxBackups: 0,
      maxAgeDays: 2,
      compress: true,
      now: () => now,
    });
    f.write(Buffer.alloc(MIB - 10, 'y'));
    f.write(Buffer.from('z'.repeat(20)));
    f.close();
    const names = readdirSync(d).sort();
    assert.deepEqual(names, [
      'audit-2026-12-06T08-00-00.000.log.gz',
      'audit-2026-12-06T09-00-00.000.log.gz',
      'audit.log',
      'unrelated.log',
    ]);
    assert.equal(
      gunzipSync(readFileSync(join(d, 'audit-2026-12-06T08-00-00.000.log.gz'))).toString(),
      'recent\n',
    );
    assert.equal(readFileSync(path, 'utf8'), 'z'.repeat(20));
  });
});
