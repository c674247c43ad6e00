/**
 * A heap snapshot's retained-by-kind breakdown, for the bench's memory section:
 *   node bench/tools/heap-classes.ts FILE.heapsnapshot [top=15]  → one JSON line {@link HeapClasses}
 * Sums each node's self size by class: JS objects by constructor name, everything else by V8
 * node type in parentheses (`(string)`, `(array)`, `(code)`, …); ArrayBuffer/Buffer contents
 * are `native` nodes (`system / JSArrayBufferData`). Snapshot format: V8's
 * HeapSnapshotJSONSerializer (`snapshot.meta.node_fields`, `node_types`, `strings`).
 */
import { readFileSync } from 'node:fs';
import type { HeapClasses } from '../report/results.ts';
import { toolArgs } from '../support/args.ts';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

/** Groups the nodes of a parsed snapshot; `top` classes kept, the rest summed as `(other)`. */
export function heapClasses(s: Snapshot, top = 15): HeapClasses {
  const f = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0];
  const [iType, iName, iSize] = [f.indexOf('type'), f.indexOf('name'), f.indexOf('self_size')];
  const by = new Map<string, { count: number; bytes: number }>();
  let totalBytes = 0;
  for (let i = 0; i < s.nodes.length; i += f.length) {
    const type = types[s.nodes[i + iType]!]!;
    const size = s.nodes[i + iSize]!;
    if (!size) continue;
    const name = type === 'object' || type === 'native' ? s.strings[s.nodes[i + iName]!]! : `(${type})`;
    const e = by.get(name) ?? { count: 0, bytes: 0 };
    e.count++;
    e.bytes += size;
    by.set(name, e);
    totalBytes += size;
  }
  const all = [...by].map(([name, e]) => ({ name, ...e })).sort((a, b) => b.bytes - a.bytes);
  const rest = all.slice(top);
  const classes = all.slice(0, top);
  if (rest.length)
    classes.push({
      name: '(other)',
      count: rest.reduce((x, e) => x + e.count, 0),
      bytes: rest.reduce((x, e) => x + e.bytes, 0),
    });
  return { totalBytes, classes };
}

if (import.meta.main) {
  const [file, top] = toolArgs({}).positionals;
  if (!file) throw new Error('usage: heap-classes.ts FILE.heapsnapshot [top]');
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  process.stdout.write(`${JSON.stringify(heapClasses(s, top ? Number(top) : 15))}\n`);
}
