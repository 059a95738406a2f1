/** The memory store's concurrency leases: who holds a place under each key, bounded and O(log n) per call. */

import { randomLeaseId } from '../lease-id.js';
import { leaseRefusal } from '../lease-refusal.js';
import type { Lease, LeaseDecision } from '../store.js';
import { ExpiryHeap, type LeaseEntry } from './expiry-heap.js';

/**
 * Estimated bytes one lease holds: its 22-character id, the entry object, a Map entry and two heap slots.
 * Counted in the store's `maxBytes` like keys are.
 */
export const LEASE_BYTES = 160;
/** Estimated bytes of a key's lease bookkeeping besides its leases (the key string counts apart). */
const KEY_BYTES = 200;
/** A heap is compacted once it holds this many stale entries more than live ones. */
const SLACK = 32;

/** One key's leases: id → entry, and the same entries by expiry. */
interface KeyLeases {
  readonly ids: Map<string, LeaseEntry>;
  readonly heap: ExpiryHeap;
  /** The latest expiry handed out while the key held leases: an upper bound of when all lapse. */
  latest: number;
}

/**
 * In-flight leases per key for the concurrency limiter. Every call costs O(log n) in the key's leases
 * (no scan): a lease lapses from the top of its key's expiry heap, and a table-wide heap frees the
 * leases of keys nobody touches again, a few per call. The whole table is bounded — at most `maxKeys`
 * keys and `maxBytes` (the store gives it half of its own) — and when it is full a
 * new lease is refused, never made by forgetting another holder's (that would admit over a limit).
 * Lease ids are 128 random bits: knowing one lease does not tell another's.
 */
export class LeaseTable {
  readonly #byKey = new Map<string, KeyLeases>();
  readonly #all = new ExpiryHeap();
  #count = 0;
  #keyBytes = 0;
  /** Acquires refused because the table was full. */
  refused = 0;

  readonly #maxKeys: number;
  readonly #maxBytes: number;

  constructor(maxKeys: number, maxBytes: number) {
    this.#maxKeys = maxKeys;
    this.#maxBytes = maxBytes;
  }

  /** Leases held now (some may have lapsed but not been freed yet). */
  get size(): number {
    return this.#count;
  }

  /** Estimated bytes held. */
  get bytes(): number {
    return this.#count * LEASE_BYTES + this.#keyBytes;
  }

  acquire(key: string, limit: number, leaseMs: number, nowMs: number): LeaseDecision {
    this.#prune(nowMs, 8);
    const held = this.#live(key, nowMs);
    const inFlight = held?.ids.size ?? 0;
    const soonest = held === undefined ? 0 : (held.heap.peek() as LeaseEntry).expiresAt - nowMs;
    const latest = held === undefined ? 0 : held.latest - nowMs;
    if (inFlight >= limit) {
      return leaseRefusal(limit, latest, soonest);
    }
    if (!this.#fits(key, held === undefined)) {
      this.#prune(nowMs, Number.POSITIVE_INFINITY);
      if (!this.#fits(key, held === undefined)) {
        this.refused++;
        // The table is full: retry when the soonest lease anywhere lapses.
        const next = this.#all.peek();
        return leaseRefusal(limit, Math.max(latest, 1), Math.max(1, next === undefined ? 1 : next.expiresAt - nowMs));
      }
    }
    const entry: LeaseEntry = { key, id: randomLeaseId(), expiresAt: nowMs + leaseMs };
    let leases = held;
    if (leases === undefined) {
      leases = { ids: new Map(), heap: new ExpiryHeap(), latest: 0 };
      this.#byKey.set(key, leases);
      this.#keyBytes += KEY_BYTES + 2 * key.length;
    }
    leases.ids.set(entry.id, entry);
    leases.heap.push(entry);
    leases.latest = Math.max(leases.latest, entry.expiresAt);
    this.#all.push(entry);
    this.#count++;
    return {
      allowed: true,
      limit,
      remaining: limit - leases.ids.size,
      resetMs: Math.max(latest, leaseMs),
      retryAfterMs: 0,
      lease: { key, id: entry.id, expiresAt: entry.expiresAt },
    };
  }

  release(lease: Lease, nowMs: number): boolean {
    this.#prune(nowMs, 8);
    const held = this.#live(lease.key, nowMs);
    if (held === undefined) return false;
    const entry = held.ids.get(lease.id);
    if (entry === undefined) return false;
    held.ids.delete(lease.id);
    this.#count--;
    if (held.ids.size === 0) this.#forgetKey(lease.key);
    else if (held.heap.size > 2 * held.ids.size + SLACK) held.heap.rebuild(held.ids.values());
    if (this.#all.size > 2 * this.#count + SLACK * 32) this.#all.rebuild(this.#entries());
    return true;
  }

  /** The key's unexpired leases, or undefined when none: lapsed ones leave from the top of its heap. */
  #live(key: string, nowMs: number): KeyLeases | undefined {
    const held = this.#byKey.get(key);
    if (held === undefined) return undefined;
    for (let top = held.heap.peek(); top !== undefined; top = held.heap.peek()) {
      const current = held.ids.get(top.id) === top;
      if (current && top.expiresAt > nowMs) break;
      held.heap.pop();
      if (current) {
        held.ids.delete(top.id);
        this.#count--;
      }
    }
    if (held.ids.size === 0) {
      this.#forgetKey(key);
      return undefined;
    }
    return held;
  }

  /** Frees up to `budget` lapsed leases table-wide, soonest first (released ones are skipped for free). */
  #prune(nowMs: number, budget: number): void {
    for (let top = this.#all.peek(); top !== undefined && budget > 0; top = this.#all.peek()) {
      const held = this.#byKey.get(top.key);
      const current = held?.ids.get(top.id) === top;
      if (current && top.expiresAt > nowMs) return;
      this.#all.pop();
      if (current) {
        budget--;
        this.#live(top.key, nowMs);
      }
    }
  }

  /** Whether one more lease (and, for a new key, its bookkeeping) stays within maxKeys and maxBytes. */
  #fits(key: string, newKey: boolean): boolean {
    if (newKey && this.#byKey.size >= this.#maxKeys) return false;
    return this.bytes + LEASE_BYTES + (newKey ? KEY_BYTES + 2 * key.length : 0) <= this.#maxBytes;
  }

  #forgetKey(key: string): void {
    if (this.#byKey.delete(key)) this.#keyBytes -= KEY_BYTES + 2 * key.length;
  }

  *#entries(): Iterable<LeaseEntry> {
    for (const held of this.#byKey.values()) yield* held.ids.values();
  }
}
