import type { Algorithm } from '../../algorithms/index.js';
import { NUMERIC_ALGORITHMS, SLOT_WIDTH } from '../../algorithms/index.js';
import { SlidingLogState, slidingLog } from '../../algorithms/sliding-log.js';
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { Lease, LeaseDecision, Store, StoreItem } from '../store.js';
import { BlockList } from './block-list.js';
import { LeaseTable } from './lease-table.js';
import { LruSlab } from './lru-slab.js';

/** Options of the memory store. */
export interface MemoryStoreOptions {
  /** Most keys kept at once; past it the least recently used key is forgotten. @default 1_000_000 */
  maxKeys?: number;
  /** How often an unref'd timer frees expired keys, in ms; 0 turns the sweep off. @default 10_000 */
  sweepIntervalMs?: number;
}

/** Counters of what the memory store did, for metrics and tests. */
export interface MemoryStoreStats {
  keys: number;
  evictions: number;
  swept: number;
}

/** The memory store, with its stats and a manual sweep (for tests and tools). */
export interface MemoryStore extends Store {
  readonly synchronous: true;
  check(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Decision;
  checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Decision[];
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number): void;
  reset(key: string, policy: ResolvedPolicy): void;
  acquire(key: string, limit: number, leaseMs: number, nowMs: number): LeaseDecision;
  release(lease: Lease, nowMs: number): boolean;
  stats(): MemoryStoreStats;
  /** Frees keys expired at `nowMs` (default: the latest time the store has seen). */
  sweep(nowMs?: number): number;
}

const SWEEP_BUDGET = 10_000;

type NumericName = keyof typeof NUMERIC_ALGORITHMS;

/** What the store keeps per policy. */
interface PolicyContext {
  readonly table: Map<string, number>;
  /** The numeric algorithm (unused for sliding-log, whose state is a log). */
  readonly algorithm: Algorithm;
}

/**
 * Creates the in-process store: bounded (LRU past `maxKeys`), lazily expired, with one unref'd sweep
 * timer for the whole store and none per key. It answers synchronously, and since JavaScript runs one
 * check at a time, every check — and every `checkMany` — is atomic.
 *
 * A store belongs to one process (or one worker thread); to share limits across processes use Redis.
 * @example const limiter = createLimiter({ limit: 10, period: '1s', store: createMemoryStore({ maxKeys: 10_000 }) });
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const maxKeys = options.maxKeys ?? 1_000_000;
  if (!Number.isInteger(maxKeys) || maxKeys < 1 || maxKeys > 2 ** 30) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `maxKeys: ${String(maxKeys)} is not a whole number ≥ 1`, {
      option: 'maxKeys',
    });
  }
  const sweepIntervalMs = options.sweepIntervalMs ?? 10_000;
  if (!Number.isInteger(sweepIntervalMs) || sweepIntervalMs < 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'sweepIntervalMs: must be a whole number of ms ≥ 0', {
      option: 'sweepIntervalMs',
    });
  }

  const slab = new LruSlab(maxKeys);
  /**
   * policy.id → the policy's algorithm and its key → slot table. A table per policy keeps lookups to
   * the user's key with no string joining, and one lookup here finds both.
   */
  const contexts = new Map<string, PolicyContext>();
  const blocks = new BlockList(maxKeys);
  const leases = new LeaseTable(maxKeys);
  /** State of a key not stored yet: checked here first, copied into a slot only if it consumed. */
  const scratch = new Float64Array(SLOT_WIDTH);
  let latestNow = 0;
  let swept = 0;
  let closed = false;

  const timer =
    sweepIntervalMs > 0
      ? setInterval(() => {
          swept += slab.sweep(latestNow, SWEEP_BUDGET);
          blocks.prune(latestNow);
        }, sweepIntervalMs)
      : undefined;
  // Node and Bun return a Timeout with unref(); Cloudflare Workers, Deno and browsers return a number.
  (timer as { unref?: () => void } | undefined)?.unref?.();

  function contextOf(policy: ResolvedPolicy): PolicyContext {
    let context = contexts.get(policy.id);
    if (context === undefined) {
      context = { table: new Map(), algorithm: NUMERIC_ALGORITHMS[policy.algorithm as NumericName] };
      contexts.set(policy.id, context);
    }
    return context;
  }

  /** The live slot of `key` in `table`, or -1. An expired slot is zeroed on the way (lazy expiry). */
  function find(table: Map<string, number>, key: string, nowMs: number): number {
    const slot = table.get(key);
    if (slot === undefined) return -1;
    if ((slab.expiresAt[slot] as number) <= nowMs) slab.clear(slot);
    slab.touch(slot);
    return slot;
  }

  function decide(key: string, p: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Decision {
    if (closed) throw new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the memory store was closed');
    if (nowMs > latestNow) latestNow = nowMs;
    if (p.blockMs > 0) {
      const blocked = blocks.check(p.id, key, nowMs, p.limit);
      if (blocked) return blocked;
    }
    const decision =
      p.algorithm === 'sliding-log'
        ? decideLog(key, p, cost, nowMs, commit)
        : decideNumeric(key, p, cost, nowMs, commit);
    if (!decision.allowed && commit && p.blockMs > 0) blocks.block(p.id, key, nowMs + p.blockMs);
    return decision;
  }

  function decideNumeric(key: string, p: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Decision {
    const { table, algorithm } = contextOf(p);
    const slot = find(table, key, nowMs);
    if (slot !== -1) {
      const decision = algorithm.check(slab.state, slot * SLOT_WIDTH, nowMs, p, cost, commit);
      if (decision.allowed && commit && cost > 0)
        slab.expiresAt[slot] = algorithm.expiresAt(slab.state, slot * SLOT_WIDTH, p);
      return decision;
    }
    // A key with no state: decide on zeros and store only what an admitted request wrote, so rejected
    // requests and peeks never grow the store.
    scratch.fill(0);
    const decision = algorithm.check(scratch, 0, nowMs, p, cost, commit);
    if (decision.allowed && commit && cost > 0) {
      const fresh = slab.allocate(key, table);
      slab.state.set(scratch, fresh * SLOT_WIDTH);
      slab.expiresAt[fresh] = algorithm.expiresAt(scratch, 0, p);
    }
    return decision;
  }

  function decideLog(key: string, p: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Decision {
    const { table } = contextOf(p);
    const slot = find(table, key, nowMs);
    const log = (slot === -1 ? undefined : slab.logs[slot]) ?? new SlidingLogState();
    const decision = slidingLog.check(log, 0, nowMs, p, cost, commit);
    if (decision.allowed && commit && cost > 0) {
      const target = slot === -1 ? slab.allocate(key, table) : slot;
      slab.logs[target] = log;
      slab.expiresAt[target] = slidingLog.expiresAt(log, 0, p);
    }
    return decision;
  }

  function refund(key: string, p: ResolvedPolicy, cost: number, nowMs: number): void {
    const { table, algorithm } = contextOf(p);
    const slot = find(table, key, nowMs);
    if (slot === -1) return;
    if (p.algorithm !== 'sliding-log') algorithm.refund(slab.state, slot * SLOT_WIDTH, nowMs, p, cost);
    else {
      const log = slab.logs[slot];
      if (log) slidingLog.refund(log, 0, nowMs, p, cost);
    }
  }

  return {
    name: 'memory',
    synchronous: true,
    check: decide,

    checkMany(items, nowMs, commit) {
      // Look first, consume only if every limit allows: a rejected request takes from none of them.
      const looks = items.map((item) => decide(item.key, item.policy, item.cost, nowMs, false));
      if (!looks.every((d) => d.allowed)) {
        if (commit) {
          for (const [i, item] of items.entries()) {
            if (!looks[i]?.allowed && item.policy.blockMs > 0)
              blocks.block(item.policy.id, item.key, nowMs + item.policy.blockMs);
          }
        }
        return looks;
      }
      if (!commit) return looks;
      const taken: Decision[] = [];
      for (const item of items) {
        const decision = decide(item.key, item.policy, item.cost, nowMs, true);
        taken.push(decision);
        if (!decision.allowed) {
          // Only possible when one (key, policy) appears twice and the second does not fit: undo the rest.
          for (const [i, done] of items.entries()) {
            if (i >= taken.length - 1) break;
            refund(done.key, done.policy, done.cost, nowMs);
          }
          return taken.concat(looks.slice(taken.length));
        }
      }
      return taken;
    },

    refund,

    reset(key, p) {
      const slot = contexts.get(p.id)?.table.get(key);
      if (slot !== undefined) slab.free(slot);
      blocks.unblock(p.id, key);
    },

    acquire(key, limit, leaseMs, nowMs) {
      if (nowMs > latestNow) latestNow = nowMs;
      return leases.acquire(key, limit, leaseMs, nowMs);
    },

    release(lease, nowMs) {
      return leases.release(lease, nowMs);
    },

    stats: () => ({ keys: slab.size, evictions: slab.evictions, swept }),

    sweep(nowMs = latestNow) {
      const freed = slab.sweep(nowMs, Number.POSITIVE_INFINITY);
      blocks.prune(nowMs);
      swept += freed;
      return freed;
    },

    async close() {
      closed = true;
      if (timer) clearInterval(timer);
    },
  };
}
