/**
 * The layer rule of docs/design.md §1, checked on the source tree: each folder under src/ is one
 * layer, a layer imports only layers below it (apimachinery imports none of ours), the root holds
 * only the wiring (`cli.ts`, `main.ts`), only `resources/` constructs a Reflector or a WatchCache
 * (one owner per cached resource), the server knows nothing of caching on demand, every module
 * opens with its docstring, and a file over 450 lines is an alarm unless the list below names the
 * one concept it holds.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '../../../src');

/** Bottom to top. The top-level files (main.ts, cli.ts) form the last layer. */
const LAYERS = [
  'apimachinery',
  'util',
  'printers',
  'config',
  'upstream',
  'reflector',
  'cache',
  'snapshot',
  'resources',
  'ops',
  'auth',
  'audit',
  'server',
  'on-demand',
  '.',
] as const;

/** The only files at src/ root: the wiring. */
const ROOT_FILES = ['cli.ts', 'main.ts'];

/** Line cap of a file under src/: longer is an alarm, unless named here with the one concept it holds. */
const MAX_LINES = 450;
const LONG_FILES: Record<string, string> = {
  'cache/store-entry.ts':
    "one stored object in the store's slabs: its bytes, the encodings kept for it (packed in its own fields to save an object each) and its selectable fields",
  'printers/column-definitions.ts':
    "the apiserver's Table column definitions, generated (test/apiserver/tablecolumns)",
  'server/delegate.ts': 'the one cache-or-upstream decision and its closed list of reasons',
};

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function layerOf(file: string): number {
  const rel = relative(src, file);
  const top = rel.includes('/') ? rel.slice(0, rel.indexOf('/')) : '.';
  const i = (LAYERS as readonly string[]).indexOf(top);
  assert.notEqual(i, -1, `${rel}: folder ${top} is not a layer of docs/design.md §1`);
  return i;
}

/** Relative import specifiers of a module (static, dynamic and `new URL(…)` module references). */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) out.push(m[1]!);
  return out;
}

describe('source layers (docs/design.md §1)', () => {
  const all = files(src);

  it('every folder under src/ is a known layer', () => {
    for (const f of all) layerOf(f);
    assert.ok(all.length > 40, `found only ${all.length} files`);
  });

  it('imports go to the same layer or below, never up', () => {
    const bad: string[] = [];
    for (const f of all) {
      const from = layerOf(f);
      for (const spec of imports(f)) {
        const target = resolve(dirname(f), spec);
        const to = layerOf(target);
        if (to > from) bad.push(`${relative(src, f)} imports ${relative(src, target)}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  it('apimachinery imports nothing else of ours', () => {
    const bad: string[] = [];
    for (const f of all.filter((f) => layerOf(f) === 0)) {
      for (const spec of imports(f)) {
        const target = resolve(dirname(f), spec);
        if (layerOf(target) !== 0) bad.push(`${relative(src, f)} imports ${relative(src, target)}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  it('no import cycles', () => {
    const graph = new Map(all.map((f) => [f, imports(f).map((s) => resolve(dirname(f), s))]));
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (f: string, path: string[]) => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        cycles.push([...path.slice(path.indexOf(f)), f].map((p) => relative(src, p)).join(' -> '));
        return;
      }
      state.set(f, 'open');
      for (const t of graph.get(f) ?? []) visit(t, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of all) visit(f, []);
    assert.deepEqual(cycles, []);
  });

  it(`no file under src/ is over ${MAX_LINES} lines unless LONG_FILES names its one concept`, () => {
    const long = all
      .map((f) => [relative(src, f), readFileSync(f, 'utf8').split('\n').length - 1] as const)
      .filter(([rel, n]) => n > MAX_LINES && LONG_FILES[rel] === undefined);
    assert.deepEqual(long, []);
    for (const rel of Object.keys(LONG_FILES))
      assert.ok(
        all.some((f) => relative(src, f) === rel),
        `LONG_FILES names ${rel}, which does not exist`,
      );
  });

  it('src/ root holds only the wiring', () => {
    const root = all.filter((f) => !relative(src, f).includes('/')).map((f) => relative(src, f));
    assert.deepEqual(root.sort(), ROOT_FILES);
  });

  it('only resources/ constructs a Reflector or a WatchCache (one owner per cached resource)', () => {
    const bad = all
      .filter((f) => !relative(src, f).startsWith('resources/'))
      .filter((f) => /new (Reflector|WatchCache)\(/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(src, f));
    assert.deepEqual(bad, []);
  });

  it('server/ imports nothing from on-demand/ (caching on demand subscribes to request-hooks.ts)', () => {
    const bad: string[] = [];
    for (const f of all.filter((f) => relative(src, f).startsWith('server/'))) {
      for (const spec of imports(f)) {
        const target = relative(src, resolve(dirname(f), spec));
        if (target.startsWith('on-demand/')) bad.push(`${relative(src, f)} imports ${target}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  it('every module under src/ opens with its docstring (/** … */ before the first import)', () => {
    const bad = all
      .filter((f) => !/^(#![^\n]*\n)?\/\*\*/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(src, f));
    assert.deepEqual(bad, []);
  });

  it('no two files under src/ share a name (barrel index.ts aside)', () => {
    const seen = new Map<string, string>();
    const dup: string[] = [];
    for (const f of all) {
      const base = f.slice(f.lastIndexOf('/') + 1);
      if (base !== 'index.ts' && seen.has(base)) dup.push(`${seen.get(base)} and ${relative(src, f)}`);
      seen.set(base, relative(src, f));
    }
    assert.deepEqual(dup, []);
  });
});
