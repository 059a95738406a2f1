import { SLOT_WIDTH } from '../../algorithms/index.js';
import type { SlidingLogState } from '../../algorithms/sliding-log.js';

/**
 * Fixed-width records for up to `maxKeys` keys in flat typed arrays, linked in least-recently-used
 * order. One key costs its string, a Map entry and 64 bytes here (four numbers, two links, three
 * references) — no object per key, no timer per key. Slots are found through the caller's Map
 * (key → slot); the slab only owns the records.
 */
export class LruSlab {
  /** Numeric state, SLOT_WIDTH numbers per slot. */
  state: Float64Array;
  /** When each slot's state becomes equal to a fresh one (ms since the epoch). */
  expiresAt: Float64Array;
  /** Sliding-log state, for slots that hold one. */
  readonly logs: (SlidingLogState | undefined)[] = [];
  /** Owner of each slot, so an evicted slot can be removed from its table. */
  readonly keys: (string | undefined)[] = [];
  readonly tables: (Map<string, number> | undefined)[] = [];

  private newer: Int32Array;
  private older: Int32Array;
  /** Most and least recently used slots; -1 when empty. */
  private newest = -1;
  private oldest = -1;
  private freeSlots: number[] = [];
  private used = 0;
  private capacity: number;
  evictions = 0;

  constructor(readonly maxKeys: number) {
    this.capacity = Math.min(maxKeys, 1024);
    this.state = new Float64Array(this.capacity * SLOT_WIDTH);
    this.expiresAt = new Float64Array(this.capacity);
    this.newer = new Int32Array(this.capacity);
    this.older = new Int32Array(this.capacity);
  }

  /** Number of live slots. */
  get size(): number {
    return this.used - this.freeSlots.length;
  }

  /** Takes a zeroed slot for `key` in `table`, evicting the least recently used key when full. */
  allocate(key: string, table: Map<string, number>): number {
    let slot: number;
    if (this.freeSlots.length > 0) slot = this.freeSlots.pop() as number;
    else if (this.used < this.capacity) slot = this.used++;
    else if (this.capacity < this.maxKeys) {
      this.grow();
      slot = this.used++;
    } else {
      slot = this.oldest;
      this.evictions++;
      this.unlink(slot);
      this.tables[slot]?.delete(this.keys[slot] as string);
    }
    this.clear(slot);
    this.keys[slot] = key;
    this.tables[slot] = table;
    table.set(key, slot);
    this.linkNewest(slot);
    return slot;
  }

  /** Marks a slot as just used. */
  touch(slot: number): void {
    if (slot === this.newest) return;
    this.unlink(slot);
    this.linkNewest(slot);
  }

  /** Zeroes a slot's state (it reads as a key never seen). */
  clear(slot: number): void {
    const base = slot * SLOT_WIDTH;
    for (let i = 0; i < SLOT_WIDTH; i++) this.state[base + i] = 0;
    this.expiresAt[slot] = 0;
    this.logs[slot] = undefined;
  }

  /** Removes a slot and its key. */
  free(slot: number): void {
    this.unlink(slot);
    this.tables[slot]?.delete(this.keys[slot] as string);
    this.keys[slot] = undefined;
    this.tables[slot] = undefined;
    this.clear(slot);
    this.freeSlots.push(slot);
  }

  /**
   * Frees expired slots, starting from the least recently used, looking at no more than `budget`
   * slots so a sweep never stalls the event loop. Returns how many it freed.
   */
  sweep(nowMs: number, budget: number): number {
    let freed = 0;
    let slot = this.oldest;
    for (let seen = 0; slot !== -1 && seen < budget; seen++) {
      const next = this.newer[slot] as number;
      if ((this.expiresAt[slot] as number) <= nowMs) {
        this.free(slot);
        freed++;
      }
      slot = next;
    }
    return freed;
  }

  private grow(): void {
    const capacity = Math.min(this.maxKeys, this.capacity * 2);
    const grown = <T extends Float64Array | Int32Array>(from: T, make: (n: number) => T, width = 1): T => {
      const to = make(capacity * width);
      to.set(from);
      return to;
    };
    this.state = grown(this.state, (n) => new Float64Array(n), SLOT_WIDTH);
    this.expiresAt = grown(this.expiresAt, (n) => new Float64Array(n));
    this.newer = grown(this.newer, (n) => new Int32Array(n));
    this.older = grown(this.older, (n) => new Int32Array(n));
    this.capacity = capacity;
  }

  private linkNewest(slot: number): void {
    this.older[slot] = this.newest;
    this.newer[slot] = -1;
    if (this.newest !== -1) this.newer[this.newest] = slot;
    this.newest = slot;
    if (this.oldest === -1) this.oldest = slot;
  }

  private unlink(slot: number): void {
    const newer = this.newer[slot] as number;
    const older = this.older[slot] as number;
    if (newer !== -1) this.older[newer] = older;
    else this.newest = older;
    if (older !== -1) this.newer[older] = newer;
    else this.oldest = newer;
  }
}
