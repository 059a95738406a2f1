/**
 * The memory store: every algorithm over flat typed arrays in this process, bounded by keys and bytes, decided synchronously.
 */
import type { Decision } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { Lease, LeaseDecision, Store, StoreItem } from '../store.js';
import { MemoryDecider } from './memory-decider.js';
import { type MemoryStoreOptions, resolveMemoryStoreOptions } from './memory-options.js';

export type { MemoryStoreOptions } from './memory-options.js';

/** Counters of what the memory store did, for metrics and tests. */
export interface MemoryStoreStats {
  keys: number;
  /** Estimated bytes of state held now (see `maxBytes`), leases included. */
  bytes: number;
  /** Concurrency leases held now (at most half of `maxBytes` worth). */
  leases: number;
  /** New leases refused because the leases already held filled their share of `maxBytes` or `maxKeys`. */
  leasesRefused: number;
  /** Keys (and blocks) forgotten to stay within maxKeys/maxBytes: each one started afresh. */
  evictions: number;
  /** Of those, keys forgotten while at their limit or blocked (only when nothing else was left). */
  evictedAtLimit: number;
  /** Expired keys freed by the sweep. */
  swept: number;
}

/** The memory store, with its stats and a manual sweep (for tests and tools). */
export interface MemoryStore extends Store {
  readonly synchronous: true;
  check(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Decision;
  checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Decision[];
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, takenAtMs?: number): void;
  charge(items: readonly StoreItem[], nowMs: number): Decision[];
  refundMany(items: readonly StoreItem[], nowMs: number): void;
  reset(key: string, policy: ResolvedPolicy): void;
  acquire(key: string, limit: number, leaseMs: number, nowMs: number): LeaseDecision;
  release(lease: Lease, nowMs: number): boolean;
  stats(): MemoryStoreStats;
  /** Frees keys expired at `nowMs` (default: the latest time the store has seen). */
  sweep(nowMs?: number): number;
}

/** Most expired keys one timer tick frees (the rest wait for the next tick or their next check). */
const SWEEP_BUDGET = 10_000;

/**
 * Creates the in-process store: bounded in keys and bytes (forgetting least first past either bound),
 * lazily expired, with one unref'd sweep timer for the whole store and none per key. It answers synchronously, and since JavaScript runs one
 * check at a time, every check — and every `checkMany` — is atomic.
 *
 * A store belongs to one process (or one worker thread); to share limits across processes use Redis.
 * @example const limiter = createLimiter({ limit: 10, period: '1s', store: createMemoryStore({ maxKeys: 10_000 }) });
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const { maxKeys, maxBytes, sweepIntervalMs } = resolveMemoryStoreOptions(options);
  const d = new MemoryDecider(maxBytes, maxKeys);
  const { slab, blocks, leases, latest } = d;
  let swept = 0;
  const timer =
    sweepIntervalMs > 0
      ? setInterval(() => {
          swept += slab.sweep(latest[0] as number, SWEEP_BUDGET);
          blocks.prune(latest[0] as number);
        }, sweepIntervalMs)
      : undefined;
  // Node and Bun return a Timeout with unref(); Cloudflare Workers, Deno and browsers return a number.
  (timer as { unref?: () => void } | undefined)?.unref?.();

  return {
    name: 'memory',
    synchronous: true,
    // The hot path: the limiter's check calls this, and V8 inlines the decider's step into it.
    check: (key, p, cost, nowMs, commit) => d.decide(key, p, cost, nowMs, commit),
    checkMany: (items, nowMs, commit) => checkAllOrNothing(d, items, nowMs, commit),
    refund: (key, p, cost, nowMs, takenAtMs) => d.refund(key, p, cost, nowMs, takenAtMs),
    // One call, so all items at once: JavaScript runs it to the end before any other check.
    charge: (items, nowMs) => items.map((item) => d.charge(item.key, item.policy, item.cost, nowMs)),
    refundMany(items, nowMs) {
      for (const item of items) d.refund(item.key, item.policy, item.cost, nowMs, item.takenAtMs);
    },
    reset: (key, p) => d.reset(key, p),

    acquire(key, limit, leaseMs, nowMs) {
      if (nowMs > (latest[0] as number)) latest[0] = nowMs;
      const decision = leases.acquire(key, limit, leaseMs, nowMs);
      if (decision.lease !== undefined) d.fitBytes(-1);
      return decision;
    },

    release: (lease, nowMs) => leases.release(lease, nowMs),

    stats: () => ({
      keys: slab.size,
      bytes: d.bytes,
      leases: leases.size,
      leasesRefused: leases.refused,
      evictions: slab.evictions + blocks.evictions,
      evictedAtLimit: slab.evictedAtLimit + blocks.evictions,
      swept,
    }),

    sweep(nowMs = latest[0] as number) {
      const freed = slab.sweep(nowMs, Number.POSITIVE_INFINITY);
      blocks.prune(nowMs);
      swept += freed;
      return freed;
    },

    async close() {
      d.closed = true;
      if (timer) clearInterval(timer);
    },
  };
}

/** Several limits, all or nothing: look first, consume only if every limit allows; a rejected request takes none. */
function checkAllOrNothing(d: MemoryDecider, items: readonly StoreItem[], nowMs: number, commit: boolean): Decision[] {
  const looks = items.map((item) => d.decide(item.key, item.policy, item.cost, nowMs, false));
  if (!looks.every((look) => look.allowed)) {
    if (commit) {
      for (const [i, item] of items.entries()) {
        if (!looks[i]?.allowed && item.policy.blockMs > 0)
          d.blocks.block(item.policy.id, item.key, nowMs + item.policy.blockMs);
      }
    }
    return looks;
  }
  if (!commit) return looks;
  const taken: Decision[] = [];
  for (const item of items) {
    const decision = d.decide(item.key, item.policy, item.cost, nowMs, true);
    taken.push(decision);
    if (!decision.allowed) {
      // Only possible when one (key, policy) appears twice and the second does not fit: undo the rest.
      for (const done of items.slice(0, taken.length - 1)) d.refund(done.key, done.policy, done.cost, nowMs);
      return taken.concat(looks.slice(taken.length));
    }
  }
  return taken;
}
