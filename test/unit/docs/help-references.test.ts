import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { renderHelp } from '../../../src/config/config.ts';
import { headings } from '../../support/markdown.ts';

// `kube-cache-proxy --help` is read in a terminal, away from the documents: every document it
// names must exist, every section it names (`docs/x.md "Heading"`) must be a heading of that
// document, and it must not point "below" or "above" (it has no sections of its own).
const root = fileURLToPath(new URL('../../../', import.meta.url));

/** The documents and sections a text refers to: `path.md` and `path.md "Heading"`. */
function docReferences(text: string): Array<{ file: string; section?: string }> {
  return [...text.matchAll(/\b((?:docs|deploy)\/[\w./-]+\.md|README\.md)(?: "([^"]+)")?/g)].map((m) =>
    m[2] === undefined ? { file: m[1]! } : { file: m[1]!, section: m[2] },
  );
}

describe('--help refers only to documents and sections that exist', () => {
  const help = renderHelp();

  it('finds the references (a reference to a section, and one to a document)', () => {
    assert.deepEqual(docReferences('see docs/a.md "B c" and README.md.'), [
      { file: 'docs/a.md', section: 'B c' },
      { file: 'README.md' },
    ]);
    const refs = docReferences(help);
    assert.ok(
      refs.some((r) => r.section !== undefined),
      JSON.stringify(refs),
    );
  });

  it('every document exists and every section is one of its headings', () => {
    const bad: string[] = [];
    for (const { file, section } of docReferences(help)) {
      const path = join(root, file);
      if (!existsSync(path)) bad.push(`${file}: no such file`);
      else if (section !== undefined && !headings(readFileSync(path, 'utf8')).includes(section))
        bad.push(`${file} "${section}": no such heading`);
    }
    assert.deepEqual(bad, []);
  });

  it('points to no section "below" or "above" (the regression: --help had no "Scoped caches")', () => {
    assert.deepEqual(
      help.split('\n').filter((l) => /"[^"]+" (below|above)\b|\b(see|in) (below|above)\b/.test(l)),
      [],
    );
  });
});
