import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { FileTokenSource } from '../../../src/upstream/token-source.ts';
import { FakeClock } from '../../support/fake-clock.ts';

describe('FileTokenSource', () => {
  it('re-reads a rotated token file when it changes (checked every 10 s) and at least every 60 s', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kcp-token-'));
    try {
      const f = path.join(dir, 'token');
      writeFileSync(f, 'one\n');
      const clock = new FakeClock();
      const ts = new FileTokenSource(f, clock);
      assert.equal(ts.token(), 'one');
      writeFileSync(f, 'two-longer');
      assert.equal(ts.token(), 'one', 'not checked again before 10 s');
      await clock.step(10_000);
      assert.equal(ts.token(), 'two-longer');
      // Same size, same mtime: only the 60 s re-read notices.
      const st = new Date(1_600_000_000_000);
      writeFileSync(f, 'six-longer');
      utimesSync(f, st, st);
      await clock.step(10_000);
      ts.token();
      writeFileSync(f, 'sev-longer');
      utimesSync(f, st, st);
      await clock.step(10_000);
      assert.equal(ts.token(), 'six-longer');
      await clock.step(50_000);
      assert.equal(ts.token(), 'sev-longer');
      rmSync(f);
      await clock.step(60_000);
      assert.equal(ts.token(), 'sev-longer', 'a vanished file keeps the last good token');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
