/**
 * An array-backed FIFO with O(1) `shift`: the head advances over a dead prefix instead of moving
 * every element (`Array.prototype.shift` is O(n)), and the array is compacted once that prefix
 * dominates. It holds the history's event window (apiserver `watch_cache.go` keeps a cyclic
 * buffer with `startIndex`/`endIndex`) and each watcher's queue of live events
 * (`cache_watcher.go`'s `input` channel).
 */

/** Dead slots tolerated before a compaction is considered (amortises the copy). */
const COMPACT_AFTER = 1024;

/**
 * Items in insertion order. Logical index 0 is the oldest. Invariant: slots before the head hold
 * `undefined`, so shifted items are not kept alive.
 */
export class FifoQueue<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  /** Items in the queue. */
  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** The oldest item, without removing it. */
  peek(): T | undefined {
    return this.#items[this.#head];
  }

  /** Removes and returns the oldest item. */
  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined;
    if (this.#head === this.#items.length) this.clear();
    else if (this.#head > COMPACT_AFTER && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** The item at logical index `i` (0 = oldest); `i` must be in [0, length). */
  at(i: number): T {
    return this.#items[this.#head + i] as T;
  }

  /** A copy of the items from logical index `i` on, oldest first. */
  sliceFrom(i: number): T[] {
    return this.#items.slice(this.#head + i) as T[];
  }

  /** Drops every item. */
  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}
