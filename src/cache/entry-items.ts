/**
 * A cache LIST's items read from its store entries where they are stored (issue 32): each item
 * is its entry's LIST item bytes (`StoreEntry.listItemAt`), or for a PartialObjectMetadataList
 * read its `metadata` value (`StoreEntry.metadataAt`), addressed when the body is written; no
 * Buffer view per item and LIST.
 */
import type { ByteRef, ListItems } from '../apimachinery/list-items.ts';
import type { StoreEntry } from './store-entry.ts';

/** The items of `entries` (in order): their LIST item bytes, or with `metadata` their `metadata` values. */
export class EntryItems implements ListItems {
  readonly #entries: readonly StoreEntry[];
  readonly #metadata: boolean;

  constructor(entries: readonly StoreEntry[], metadata: boolean) {
    this.#entries = entries;
    this.#metadata = metadata;
  }

  get length(): number {
    return this.#entries.length;
  }

  locate(i: number, ref: ByteRef): void {
    const e = this.#entries[i]!;
    if (this.#metadata) e.metadataAt(ref);
    else e.listItemAt(ref);
  }
}
