/**
 * What the entries of one store share (issue 12): the resource, the TypeMeta prefix stripped from
 * built-in objects, the slabs of their bytes, and the recent label sets; and the interning of the
 * strings many entries share.
 */
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { typeMetaPrefix } from './encoding.ts';
import { SlabArena } from './slab.ts';

/**
 * What the entries of one store share: the resource, the TypeMeta prefix removed from built-in
 * objects' bytes, the slabs their bytes live in, and the label sets seen last (entries with equal
 * labels share one frozen object: siblings — a ReplicaSet's pods, a seeded batch — arrive next
 * to each other in key order).
 */
export class EntryContext {
  readonly resource: ResourceInfo;
  /** `{"kind":K,"apiVersion":V,` of a built-in kind (the bytes stripped from its objects). */
  readonly prefix: Buffer | undefined;
  /** The slabs of the entries' bytes (each slab's `owner` is this context). */
  readonly arena: SlabArena<EntryContext> = new SlabArena<EntryContext>(this);
  readonly #recentLabels: Array<Readonly<Record<string, string>>> = [];
  #nextLabel = 0;
  readonly #recentFields: Array<Readonly<Record<string, string>>> = [];
  #nextFields = 0;

  constructor(resource: ResourceInfo) {
    this.resource = resource;
    this.prefix = resource.builtIn ? typeMetaPrefix(resource) : undefined;
  }

  /** `labels` with its values interned, as one frozen object shared with recent equal sets. */
  labels(labels: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
    for (const l of this.#recentLabels) if (sameLabels(l, labels)) return l;
    const out = Object.freeze(internValues(labels));
    this.#recentLabels[this.#nextLabel] = out;
    this.#nextLabel = (this.#nextLabel + 1) % RECENT_LABEL_SETS;
    return out;
  }

  /**
   * A field set (the selectable fields besides `metadata.name` and `metadata.namespace`) with its
   * values interned, as one frozen object shared with recent equal sets, as {@link labels}: pods
   * of one node and phase, without IPs yet, or of a seeded batch have equal sets (issue 32: an
   * object per pod cost ~125 heap bytes).
   */
  fields(fields: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
    for (const f of this.#recentFields) if (sameLabels(f, fields)) return f;
    const out = Object.freeze(internValues(fields));
    this.#recentFields[this.#nextFields] = out;
    this.#nextFields = (this.#nextFields + 1) % RECENT_LABEL_SETS;
    return out;
  }
}

/** How many recent label (and field) sets an {@link EntryContext} compares a new object's with. */
const RECENT_LABEL_SETS = 8;

/** Whether two label (or field) sets hold the same keys and values. */
function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  let n = 0;
  for (const k in b) {
    if (a[k] !== b[k] || !Object.hasOwn(a, k)) return false;
    n++;
  }
  for (const _ in a) n--;
  return n === 0;
}

/**
 * The one instance of `s` in V8's string table: a property key is always internalized, and
 * `Object.keys` hands that instance back. The table is weak (a string nobody holds is collected),
 * so this deduplicates the values many entries share (namespaces, node names, phases, label
 * values) without a table of our own that would only grow. Index-like keys ("123") come back as
 * new strings: correct, just not shared.
 */
export function intern(s: string): string {
  if (s.length === 0) return '';
  return Object.keys({ [s]: 0 })[0] ?? s;
}

/** `labels` with every value {@link intern}ed (keys already are: property names are internalized). */
function internValues(labels: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const k in labels) out[k] = intern(labels[k]!);
  return out;
}
