import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { anchors, headings, links } from '../../support/markdown.ts';

// The repository stands alone: every relative link of its documents resolves inside it, and no
// file points at documents that live outside it.
const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Every Markdown file of the repository (README.md, CHANGELOG.md, docs/, deploy/, bench/, …), repository-relative. */
function documents(): string[] {
  return repositoryFiles()
    .filter((f) => f.endsWith('.md'))
    .map((f) => relative(root, f))
    .sort();
}

/** Every file of the repository except dependencies, build output, caches and git's own. */
function repositoryFiles(dir = root): string[] {
  const skip = new Set(['node_modules', '.git', '.cache', 'dist']);
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (skip.has(name)) continue;
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...repositoryFiles(p));
    else if (st.isFile() && st.size < 4 * 1024 * 1024) out.push(p);
  }
  return out;
}

describe('documentation links', () => {
  it('docs/ holds the design, operations, configuration, testing and benchmarks documents', () => {
    for (const f of ['design', 'operations', 'configuration', 'testing', 'benchmarks']) {
      assert.ok(existsSync(join(root, 'docs', `${f}.md`)), `docs/${f}.md exists`);
    }
  });

  it('every relative link of every Markdown file points at a file (and heading) that exists', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const doc of documents()) {
      const text = readFileSync(join(root, doc), 'utf8');
      for (const { target, line } of links(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        checked++;
        const [path = '', anchor] = target.split('#', 2);
        const file = path === '' ? join(root, doc) : join(root, dirname(doc), decodeURIComponent(path));
        const where = `${doc}:${line}: ${target}`;
        if (
          !relative(root, file)
            .split('/')
            .every((p) => p !== '..')
        )
          broken.push(`${where} (outside the repository)`);
        else if (!existsSync(file)) broken.push(`${where} (no such file)`);
        else if (anchor !== undefined && file.endsWith('.md')) {
          if (!anchors(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${where} (no such heading)`);
        }
      }
    }
    assert.ok(checked > 20, `links found (${checked})`);
    for (const d of ['README.md', 'CHANGELOG.md', 'deploy/README.md', 'docs/design.md'])
      assert.ok(documents().includes(d), `${d} is checked`);
    assert.deepEqual(broken, []);
  });

  it('every "docs/design.md §N" cited in the repository names a section that exists', () => {
    const design = headings(readFileSync(join(root, 'docs/design.md'), 'utf8'));
    const numbered = new Set(design.map((h) => /^(\d+)\. /.exec(h)?.[1]).filter((n) => n !== undefined));
    assert.deepEqual([...numbered], ['1', '2', '3', '4', '5', '6']);
    const bad: string[] = [];
    for (const file of repositoryFiles()) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/docs\/design\.md §(\d+)(?: "([^"]+)")?/g)) {
        const [, n, title] = m;
        if (!numbered.has(n!)) bad.push(`${relative(root, file)}: §${n}`);
        else if (title !== undefined && !design.includes(title))
          bad.push(`${relative(root, file)}: "${title}"`);
      }
    }
    assert.deepEqual(bad, []);
  });

  it('no file of the repository refers to documents outside it', () => {
    // Spelled in pieces so that this file does not name them itself.
    const outside = new RegExp(
      [
        ['shar', 'ed/'],
        ['DESI', 'GN\\.md'],
        ['FIXT', 'URE\\.md'],
        ['STY', 'LE\\.md'],
        ['refer', 'ence/'],
      ]
        .map((p) => p.join(''))
        .join('|'),
    );
    const found: string[] = [];
    for (const file of repositoryFiles()) {
      const lines = readFileSync(file, 'utf8').split('\n');
      lines.forEach((l, i) => {
        if (outside.test(l)) found.push(`${relative(root, file)}:${i + 1}: ${l.trim()}`);
      });
    }
    assert.deepEqual(found, []);
  });
});
