import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gitRevision, revision, version, versionLine } from '../../../src/util/build-info.ts';

const repo = fileURLToPath(new URL('../../../', import.meta.url));

describe('build info (--version)', () => {
  let tmp: string;
  const git = (dir: string, ...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], {
      encoding: 'utf8',
    }).trim();
  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'kcp-build-info-'));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('version() is package.json version', () => {
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string };
    assert.equal(version(), pkg.version);
  });

  it('gitRevision: HEAD of the work tree, -dirty only when a tracked file differs', () => {
    const dir = join(tmp, 'checkout');
    mkdirSync(dir);
    git(dir, 'init', '-q');
    writeFileSync(join(dir, 'a.txt'), 'one\n');
    git(dir, 'add', 'a.txt');
    git(dir, 'commit', '-qm', 'one');
    const head = git(dir, 'rev-parse', 'HEAD');
    assert.match(head, /^[0-9a-f]{40}$/);
    assert.equal(gitRevision(dir), head);
    writeFileSync(join(dir, 'untracked.txt'), 'x\n');
    assert.equal(gitRevision(dir), head, 'untracked files do not make it dirty');
    writeFileSync(join(dir, 'a.txt'), 'two\n');
    assert.equal(gitRevision(dir), `${head}-dirty`);
    git(dir, 'commit', '-qam', 'two');
    assert.equal(gitRevision(dir), git(dir, 'rev-parse', 'HEAD'));
  });

  it('gitRevision: undefined outside a git work tree, and for a folder inside another project', () => {
    const plain = join(tmp, 'plain');
    mkdirSync(plain);
    assert.equal(gitRevision(plain), undefined);
    // e.g. node_modules/kube-cache-proxy inside someone's repository: not our revision.
    const project = join(tmp, 'project');
    mkdirSync(join(project, 'node_modules/kube-cache-proxy'), { recursive: true });
    git(project, 'init', '-q');
    git(project, 'commit', '-q', '--allow-empty', '-m', 'x');
    assert.equal(gitRevision(join(project, 'node_modules/kube-cache-proxy')), undefined);
  });

  it('from this source checkout: the checkout revision, in the --version line', () => {
    const want = gitRevision(repo);
    assert.ok(want, 'the tests run from a git checkout');
    assert.equal(want.slice(0, 40), git(repo, 'rev-parse', 'HEAD'));
    assert.equal(revision(), want);
    assert.equal(versionLine(), `kube-cache-proxy ${version()} (revision ${want})`);
  });
});
