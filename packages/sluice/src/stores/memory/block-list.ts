/** The memory store's blocked keys (a policy's blockDuration), each until its instant. */
import type { Decision } from '../../core/decision.js';

/**
 * Keys blocked after a rejection (a policy's `blockMs`), until a given instant. Blocks are rare
 * compared with counters, so a Map keyed by policy and key is enough; it is pruned of lapsed blocks
 * and capped at `maxEntries` (oldest block dropped first) so an attack cannot grow it without bound.
 */
export class BlockList {
  readonly #until = new Map<string, number>();
  /** Estimated bytes of the blocks held (counted in the memory store's maxBytes). */
  bytes = 0;
  /** Blocks dropped, oldest first, because maxEntries were held. */
  evictions = 0;

  readonly #maxEntries: number;

  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries;
  }

  /** The rejection for a blocked key, or undefined when it is not blocked at `nowMs`. */
  check(policyId: string, key: string, nowMs: number, limit: number): Decision | undefined {
    const until = this.#until.get(blockKey(policyId, key));
    if (until === undefined || until <= nowMs) return undefined;
    return {
      allowed: false,
      limit,
      remaining: 0,
      resetMs: until - nowMs,
      retryAfterMs: until - nowMs,
      reason: 'blocked',
    };
  }

  block(policyId: string, key: string, untilMs: number): void {
    const id = blockKey(policyId, key);
    this.#remove(id);
    this.#until.set(id, untilMs);
    this.bytes += entryBytes(id);
    if (this.#until.size > this.#maxEntries) {
      const oldest = this.#until.keys().next().value;
      if (oldest !== undefined) {
        this.#remove(oldest);
        this.evictions++;
      }
    }
  }

  unblock(policyId: string, key: string): void {
    this.#remove(blockKey(policyId, key));
  }

  prune(nowMs: number): void {
    for (const [id, until] of this.#until) if (until <= nowMs) this.#remove(id);
  }

  #remove(id: string): void {
    if (this.#until.delete(id)) this.bytes -= entryBytes(id);
  }
}

const blockKey = (policyId: string, key: string) => `${policyId}\n${key}`;
/** A Map entry, its string key and its number. */
const entryBytes = (id: string) => 80 + id.length;
