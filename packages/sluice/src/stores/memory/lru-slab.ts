/** The memory store's key slots: least-recently-used lists (keys at their limit kept longest) over flat arrays. */
import { SLOT_WIDTH } from '../../algorithms/index.js';
import type { SlidingLogState } from '../../algorithms/sliding-log.js';

/** Which list a slot is on: keys that may be forgotten first, and keys at their limit or blocked. */
const NORMAL = 0;
const PROTECTED = 1;
/** How many of the least recently used keys an eviction looks at (Redis samples 5 too). */
const SAMPLES = 5;

/** What a slot belongs to: the table (key → slot) its key is found in, and whatever else the caller keeps there. */
export interface SlotOwner {
  readonly table: Map<string, number>;
}

/** Slots the arrays have room for at first; they double from there, up to maxKeys. */
const FIRST_CAPACITY = 1024;

/**
 * Fixed-width records for up to `maxKeys` keys in flat typed arrays — no object per key, no timer per
 * key. One key costs its string, a Map entry and 64 bytes here (four numbers, two links, three
 * references). Slots are found through their owner's Map (key → slot); the slab owns the records.
 *
 * When the store is full, a key is forgotten in the order that forgets least (docs/limiter.md's eviction
 * order): a key whose state already equals a fresh one first, then the one with the least of its quota
 * used among the SAMPLES least recently used — O(1), sampled as Redis does. Keys at their limit or
 * blocked live on a second list and are forgotten only when no other key is left: forgetting them would
 * hand their owner a full quota again (a flood of throw-away keys must not reset `login:alice`).
 */
export class LruSlab<Owner extends SlotOwner> {
  // The arrays are allocated with the first key (see grow): a store that is never used holds none.
  /** Numeric state, SLOT_WIDTH numbers per slot. */
  state = new Float64Array(0);
  /** When each slot's state becomes equal to a fresh one (ms since the epoch). */
  expiresAt = new Float64Array(0);
  /** Sliding-log state, for slots that hold one. */
  readonly logs: (SlidingLogState | undefined)[] = [];
  /** Owner of each slot: its policy, whose table an evicted slot's key is removed from. */
  readonly owners: (Owner | undefined)[] = [];
  /** Bytes of every live slot. */
  bytes = 0;
  evictions = 0;
  /** Evictions of keys at their limit or blocked (only when nothing else was left to forget). */
  evictedAtLimit = 0;

  readonly #maxKeys: number;
  /** Called when an owner's table lost its last key (the store drops the policy it belongs to). */
  readonly #onEmptied: (owner: Owner) => void;
  readonly #keys: (string | undefined)[] = [];
  /** Bytes each slot accounts for (its key and, for a sliding log, its entries). */
  #bytesOf = new Float64Array(0);
  #list = new Uint8Array(0);
  #newer = new Int32Array(0);
  #older = new Int32Array(0);
  /** Most and least recently used slot of each list; -1 when empty. */
  readonly #newest = [-1, -1];
  readonly #oldest = [-1, -1];
  #freeSlots: number[] = [];
  #used = 0;
  #capacity = 0;

  constructor(maxKeys: number, onEmptied: (owner: Owner) => void) {
    this.#maxKeys = maxKeys;
    this.#onEmptied = onEmptied;
  }

  /** Number of live slots. */
  get size(): number {
    return this.#used - this.#freeSlots.length;
  }

  /**
   * Takes a zeroed slot for `key` in its owner's table. When all `maxKeys` are taken, one key is forgotten first
   * (see the class): `usedShare(slot)` says how much of its quota a key has used now, 0 to 1.
   */
  allocate(key: string, owner: Owner, usedShare: (slot: number) => number): number {
    let slot: number;
    if (this.#freeSlots.length > 0) slot = this.#freeSlots.pop() as number;
    else if (this.#used < this.#maxKeys) {
      if (this.#used === this.#capacity) this.#grow();
      slot = this.#used++;
    } else {
      this.#evict(this.#victim(usedShare, -1));
      slot = this.#freeSlots.pop() as number;
    }
    this.clear(slot);
    this.#keys[slot] = key;
    this.owners[slot] = owner;
    owner.table.set(key, slot);
    this.#list[slot] = NORMAL;
    this.#linkNewest(slot);
    this.setBytes(slot, keyBytes(key));
    return slot;
  }

  /** Forgets one key other than `keep`, in the eviction order (to get back under the byte bound). */
  evictOne(usedShare: (slot: number) => number, keep: number): void {
    const victim = this.#victim(usedShare, keep);
    if (victim !== -1) this.#evict(victim);
  }

  /**
   * Marks a slot as just used, on the list its decision puts it: `atLimit` when nothing remains or it is
   * blocked (forgotten last), else with the keys that may be forgotten.
   */
  touch(slot: number, atLimit: boolean): void {
    const list = atLimit ? PROTECTED : NORMAL;
    if (slot !== this.#newest[list] || this.#list[slot] !== list) this.#moveToNewest(slot, list);
  }

  /** Moves a slot to the newest end of `list` (touch's slow path, kept out of it so it inlines). */
  #moveToNewest(slot: number, list: number): void {
    this.#unlink(slot);
    this.#list[slot] = list;
    this.#linkNewest(slot);
  }

  /** Sets the bytes a slot accounts for beyond its fixed record (a sliding log that grew or shrank). */
  setBytes(slot: number, bytes: number): void {
    this.bytes += bytes - (this.#bytesOf[slot] as number);
    this.#bytesOf[slot] = bytes;
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
    this.#unlink(slot);
    const owner = this.owners[slot];
    if (owner !== undefined) {
      owner.table.delete(this.#keys[slot] as string);
      if (owner.table.size === 0) this.#onEmptied(owner);
    }
    this.#keys[slot] = undefined;
    this.owners[slot] = undefined;
    this.setBytes(slot, 0);
    this.clear(slot);
    this.#freeSlots.push(slot);
  }

  /**
   * Frees expired slots, starting from the least recently used of each list, looking at no more than
   * `budget` slots so a sweep never stalls the event loop. Returns how many it freed.
   */
  sweep(nowMs: number, budget: number): number {
    let freed = 0;
    let seen = 0;
    for (const list of [NORMAL, PROTECTED]) {
      let slot = this.#oldest[list] as number;
      for (; slot !== -1 && seen < budget; seen++) {
        const next = this.#newer[slot] as number;
        if ((this.expiresAt[slot] as number) <= nowMs) {
          this.free(slot);
          freed++;
        }
        slot = next;
      }
    }
    return freed;
  }

  /**
   * The slot to forget (never `keep`): among the oldest few of the normal list, the least used; from
   * the protected list only when the normal one has nothing else. -1 when there is nothing to forget.
   */
  #victim(usedShare: (slot: number) => number, keep: number): number {
    const normal = this.#oldest[NORMAL] as number;
    const onlyKeep = normal === keep && this.#newer[normal] === -1;
    const list = normal !== -1 && !onlyKeep ? NORMAL : PROTECTED;
    let best = -1;
    let bestShare = Number.POSITIVE_INFINITY;
    let slot = this.#oldest[list] as number;
    for (let n = 0; n < SAMPLES && slot !== -1; slot = this.#newer[slot] as number) {
      if (slot === keep) continue;
      n++;
      const share = usedShare(slot);
      if (share < bestShare) {
        best = slot;
        bestShare = share;
        if (share <= 0) break; // as good as fresh: nothing is forgotten by dropping it
      }
    }
    return best;
  }

  #evict(slot: number): void {
    this.evictions++;
    if (this.#list[slot] === PROTECTED) this.evictedAtLimit++;
    this.free(slot);
  }

  #grow(): void {
    const capacity = Math.min(this.#maxKeys, Math.max(FIRST_CAPACITY, this.#capacity * 2));
    const grown = <T extends Float64Array | Int32Array | Uint8Array>(from: T, width = 1): T => {
      const to = new (from.constructor as new (length: number) => T)(capacity * width);
      to.set(from);
      return to;
    };
    this.state = grown(this.state, SLOT_WIDTH);
    this.expiresAt = grown(this.expiresAt);
    this.#bytesOf = grown(this.#bytesOf);
    this.#list = grown(this.#list);
    this.#newer = grown(this.#newer);
    this.#older = grown(this.#older);
    this.#capacity = capacity;
  }

  #linkNewest(slot: number): void {
    const list = this.#list[slot] as number;
    const newest = this.#newest[list] as number;
    this.#older[slot] = newest;
    this.#newer[slot] = -1;
    if (newest !== -1) this.#newer[newest] = slot;
    this.#newest[list] = slot;
    if (this.#oldest[list] === -1) this.#oldest[list] = slot;
  }

  #unlink(slot: number): void {
    const list = this.#list[slot] as number;
    const newer = this.#newer[slot] as number;
    const older = this.#older[slot] as number;
    if (newer !== -1) this.#older[newer] = older;
    else this.#newest[list] = older;
    if (older !== -1) this.#newer[older] = newer;
    else this.#oldest[list] = newer;
  }
}

/**
 * What a key costs in memory beyond nothing: its 64-byte record here, its Map entry (~40 bytes) and its
 * string (one byte per character for the usual ASCII keys, plus a header) — about 101 bytes for an
 * 11-character key, as measured in docs/limiter.md.
 */
export function keyBytes(key: string): number {
  return 90 + key.length;
}
