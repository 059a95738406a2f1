/** A binary min-heap of lease entries by expiry: the soonest lapse in O(1), add and take in O(log n). */

/** One lease as the heaps hold it; the same object sits in its key's heap and in the table-wide one. */
export interface LeaseEntry {
  readonly key: string;
  readonly id: string;
  readonly expiresAt: number;
}

/**
 * Entries are never removed from the middle: a released lease stays until it reaches the top, where the
 * owner sees it is stale and drops it (lazy deletion keeps release O(1)). `rebuild` compacts a heap whose
 * stale entries outnumber its live ones, so that costs O(1) amortised per release.
 */
export class ExpiryHeap {
  #items: LeaseEntry[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): LeaseEntry | undefined {
    return this.#items[0];
  }

  push(entry: LeaseEntry): void {
    const items = this.#items;
    let i = items.push(entry) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent] as LeaseEntry;
      if (p.expiresAt <= entry.expiresAt) break;
      items[i] = p;
      i = parent;
    }
    items[i] = entry;
  }

  pop(): LeaseEntry | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let i = 0;
    const n = items.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child =
        right < n && (items[right] as LeaseEntry).expiresAt < (items[left] as LeaseEntry).expiresAt ? right : left;
      if ((items[child] as LeaseEntry).expiresAt >= last.expiresAt) break;
      items[i] = items[child] as LeaseEntry;
      i = child;
    }
    items[i] = last;
    return top;
  }

  /** Replaces the contents with `live`, sorted (a sorted array is a heap): O(log n) amortised per stale entry. */
  rebuild(live: Iterable<LeaseEntry>): void {
    const items = [...live].sort((a, b) => a.expiresAt - b.expiresAt);
    this.#items = items;
  }
}
