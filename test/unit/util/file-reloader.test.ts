import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FileReloader } from '../../../src/util/file-reloader.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { logLines } from '../../support/log-lines.ts';

describe('FileReloader', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-reloader-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  function setup(name: string, content: string) {
    const file = join(dir, name);
    writeFileSync(file, content);
    const { logger: log, lines } = logLines<{ level: number; msg: string }>();
    const reloaded: string[] = [];
    const clock = new FakeClock(0);
    const r = new FileReloader<string>({
      what: 'test file',
      files: [file],
      parse: ([f]) => {
        const t = f!.content.toString();
        if (!t.startsWith('ok:')) throw new Error(`${f!.path}: does not start with ok:`);
        return t;
      },
      onReload: (v) => reloaded.push(v),
      log,
      intervalMs: 60_000,
      clock,
    });
    return { file, lines, reloaded, clock, r };
  }

  it('reads at construction and throws the parse error naming the file', () => {
    assert.equal(setup('a', 'ok:1').r.value, 'ok:1');
    assert.throws(() => setup('b', 'bad'), { message: `${join(dir, 'b')}: does not start with ok:` });
  });

  it('the periodic re-read takes a changed file, keeps the old value on a malformed one (logged once), ignores equal bytes', async () => {
    const t = setup('c', 'ok:1');
    t.r.start();
    writeFileSync(t.file, 'ok:2');
    await t.clock.step(60_000);
    assert.equal(t.r.value, 'ok:2');
    assert.deepEqual(t.reloaded, ['ok:2']);
    writeFileSync(t.file, 'garbage');
    await t.clock.step(60_000);
    await t.clock.step(60_000);
    assert.equal(t.r.value, 'ok:2');
    const warns = t.lines.filter((l) => l.level === 40).map((l) => l.msg);
    assert.deepEqual(warns, [
      `test file not reloaded, the one in use is kept: ${t.file}: does not start with ok:`,
    ]);
    writeFileSync(t.file, 'ok:2');
    await t.clock.step(60_000);
    assert.deepEqual(t.reloaded, ['ok:2'], 'the same bytes again: no reload');
    t.r.stop();
    assert.equal(t.clock.pending(), 0);
  });

  it('a missing file keeps the value and names the file', () => {
    const t = setup('d', 'ok:1');
    rmSync(t.file);
    assert.equal(t.r.check(), false);
    assert.equal(t.r.value, 'ok:1');
    assert.match(t.lines.at(-1)!.msg, new RegExp(`${t.file}: cannot read: ENOENT$`));
  });
});
