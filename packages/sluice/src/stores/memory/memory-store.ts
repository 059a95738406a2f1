/**
 * The memory store: every algorithm over flat typed arrays in this process, bounded by keys and bytes, decided synchronously.
 */
import type { Algorithm } from '../../algorithms/index.js';
import { NUMERIC_ALGORITHMS, SLOT_WIDTH } from '../../algorithms/index.js';
import { SlidingLogState, slidingLog } from '../../algorithms/sliding-log.js';
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { Lease, LeaseDecision, Store, StoreItem } from '../store.js';
import { BlockList } from './block-list.js';
import { LeaseTable } from './lease-table.js';
import { keyBytes, LruSlab } from './lru-slab.js';

/** Options of the memory store. */
export interface MemoryStoreOptions {
  /**
   * Most keys kept at once; past it one is forgotten, in the order that forgets least: a key whose
   * state equals a fresh one, then the least used of a few least recently used, and a key at its limit
   * or blocked only when nothing else is left. @default 1_000_000
   */
  maxKeys?: number;
  /**
   * Most bytes the store's state may take (keys, sliding logs, each policy's table, blocks, leases), estimated
   * per key as measured in docs/limiter.md; past it keys are forgotten in the same order. @default 128 MiB
   */
  maxBytes?: number;
  /** How often an unref'd timer frees expired keys, in ms; 0 turns the sweep off. @default 10_000 */
  sweepIntervalMs?: number;
}

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
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number): void;
  reset(key: string, policy: ResolvedPolicy): void;
  acquire(key: string, limit: number, leaseMs: number, nowMs: number): LeaseDecision;
  release(lease: Lease, nowMs: number): boolean;
  stats(): MemoryStoreStats;
  /** Frees keys expired at `nowMs` (default: the latest time the store has seen). */
  sweep(nowMs?: number): number;
}

const SWEEP_BUDGET = 10_000;

/** How a policy is decided: the numeric algorithms' hot path, a sliding log, or under a block duration. */
const NUMERIC = 0;
const LOG = 1;
const BLOCKED = 2;

const closedError = () => new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the memory store was closed');

type NumericName = keyof typeof NUMERIC_ALGORITHMS;

/** A check of `key` under `p`, given the policy's context in the store (undefined: none yet). */
type ContextCheck = (
  context: PolicyContext | undefined,
  key: string,
  p: ResolvedPolicy,
  cost: number,
  nowMs: number,
  commit: boolean,
) => Decision;

/** What the store keeps per policy. */
interface PolicyContext {
  readonly table: Map<string, number>;
  readonly policy: ResolvedPolicy;
  /** The numeric algorithm (unused for sliding-log, whose state is a log). */
  readonly algorithm: Algorithm;
}

/** A policy's table and its entry in the map of policies (counted in maxBytes: /v1/check makes policies). */
const policyBytes = (id: string) => 300 + id.length;
/** A sliding log's entries: 8 bytes per number, two numbers per admitted request, plus the array. */
const logBytes = (log: SlidingLogState) => 32 + 8 * log.entries.length;

/**
 * Creates the in-process store: bounded in keys and bytes (forgetting least first past either bound),
 * lazily expired, with one unref'd sweep timer for the whole store and none per key. It answers synchronously, and since JavaScript runs one
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
  const maxBytes = options.maxBytes ?? 128 * 1024 * 1024;
  if (!Number.isInteger(maxBytes) || maxBytes < 64 * 1024) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `maxBytes: ${String(maxBytes)} is not a whole number ≥ 65536`, {
      option: 'maxBytes',
    });
  }
  const sweepIntervalMs = options.sweepIntervalMs ?? 10_000;
  if (!Number.isInteger(sweepIntervalMs) || sweepIntervalMs < 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'sweepIntervalMs: must be a whole number of ms ≥ 0', {
      option: 'sweepIntervalMs',
    });
  }

  /**
   * policy.id → the policy's algorithm and its key → slot table. A table per policy keeps lookups to
   * the user's key with no string joining, and one lookup here finds both. A policy is added when its
   * first key is stored and dropped with its last, so policies count toward maxBytes like keys.
   */
  const contexts = new Map<string, PolicyContext>();
  const contextByTable = new Map<Map<string, number>, PolicyContext>();
  let contextBytes = 0;
  // The policy last looked up and its context (undefined: none yet). A limiter passes the same policy
  // object on every check, so this spares the hot path the lookup by id.
  let lastPolicy: ResolvedPolicy | undefined;
  let lastContext: PolicyContext | undefined;
  // How lastPolicy is decided (NUMERIC, LOG or BLOCKED), known once per policy so that a check
  // compares no algorithm names.
  let lastPath = NUMERIC;
  const slab = new LruSlab(maxKeys, (table) => {
    const context = contextByTable.get(table);
    if (context === undefined) return;
    contextByTable.delete(table);
    contexts.delete(context.policy.id);
    contextBytes -= policyBytes(context.policy.id);
    if (lastContext === context) lastPolicy = undefined;
  });
  const blocks = new BlockList(maxKeys);
  // Leases may take half of maxBytes; past it a new lease is refused (forgetting one would over-admit).
  const leases = new LeaseTable(maxKeys, Math.floor(maxBytes / 2));
  /** State of a key not stored yet: checked here first, copied into a slot only if it consumed. */
  const scratch = new Float64Array(SLOT_WIDTH);
  // The latest time the store has seen, in a Float64Array: moving it on (every new millisecond) then
  // allocates no number and takes no write barrier, as a `let` holding a double would.
  const latest = new Float64Array(1);
  let swept = 0;
  let closed = false;

  const timer =
    sweepIntervalMs > 0
      ? setInterval(() => {
          swept += slab.sweep(latest[0] as number, SWEEP_BUDGET);
          blocks.prune(latest[0] as number);
        }, sweepIntervalMs)
      : undefined;
  // Node and Bun return a Timeout with unref(); Cloudflare Workers, Deno and browsers return a number.
  (timer as { unref?: () => void } | undefined)?.unref?.();

  /** The policy's context, if it has one. */
  function existingContext(policy: ResolvedPolicy): PolicyContext | undefined {
    if (policy === lastPolicy) return lastContext;
    lastPolicy = policy;
    lastPath = policy.blockMs > 0 ? BLOCKED : policy.algorithm === 'sliding-log' ? LOG : NUMERIC;
    lastContext = contexts.get(policy.id);
    return lastContext;
  }

  function contextOf(policy: ResolvedPolicy): PolicyContext {
    let context = existingContext(policy);
    if (context === undefined) {
      context = { table: new Map(), policy, algorithm: NUMERIC_ALGORITHMS[policy.algorithm as NumericName] };
      contexts.set(policy.id, context);
      contextByTable.set(context.table, context);
      contextBytes += policyBytes(policy.id);
      lastContext = context;
    }
    return context;
  }

  /** The live slot of `key` under `policy`, or -1. An expired slot is zeroed on the way (lazy expiry). */
  function find(policy: ResolvedPolicy, key: string, nowMs: number): number {
    const slot = existingContext(policy)?.table.get(key);
    if (slot === undefined) return -1;
    if ((slab.expiresAt[slot] as number) <= nowMs) slab.clear(slot);
    return slot;
  }

  /** How much of its quota a stored key has used now, 0 (as good as fresh) to 1: the eviction order. */
  function usedShare(slot: number): number {
    if ((slab.expiresAt[slot] as number) <= (latest[0] as number)) return 0;
    const context = contextByTable.get(slab.tableOf(slot) as Map<string, number>);
    if (context === undefined) return 0;
    const p = context.policy;
    if (p.capacity === 0) return 1;
    const d =
      p.algorithm === 'sliding-log'
        ? slidingLog.check(slab.logs[slot] ?? new SlidingLogState(), 0, latest[0] as number, p, 0, false)
        : context.algorithm.check(slab.state, slot * SLOT_WIDTH, latest[0] as number, p, 0, false);
    return 1 - d.remaining / p.capacity;
  }

  /** A new slot for `key`, within maxKeys and maxBytes (forgetting others in the eviction order). */
  function store(key: string, p: ResolvedPolicy): number {
    const slot = slab.allocate(key, contextOf(p).table, usedShare);
    fitBytes(slot);
    return slot;
  }

  /** Forgets keys, least first, until the state fits in maxBytes again; never `keep`. */
  function fitBytes(keep: number): void {
    while (slab.bytes + contextBytes + blocks.bytes + leases.bytes > maxBytes && slab.size > 1)
      slab.evictOne(usedShare, keep);
  }

  /**
   * A check. A stored key under a numeric algorithm without a block is the hot path: it and what it
   * calls (decideAt, the algorithm's step, touch) are kept small enough — their bytecode within V8's
   * inlining budget, with the limiter's — for V8 to inline all of it into the limiter's check. Every
   * other case leaves it at its first test.
   */
  function decide(key: string, p: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Decision {
    if (closed) throw closedError();
    if (nowMs > (latest[0] as number)) latest[0] = nowMs;
    const context = p === lastPolicy ? lastContext : existingContext(p);
    const slot = lastPath === NUMERIC ? context?.table.get(key) : undefined;
    if (slot === undefined) return decideOther(context, key, p, cost, nowMs, commit);
    return decideAt(context as PolicyContext, slot, p, cost, nowMs, commit);
  }

  /** A numeric algorithm's step on a stored key, with the key's expiry and place in the LRU. */
  function decideAt(
    context: PolicyContext,
    slot: number,
    p: ResolvedPolicy,
    cost: number,
    nowMs: number,
    commit: boolean,
  ): Decision {
    const { algorithm } = context;
    const offset = slot * SLOT_WIDTH;
    if ((slab.expiresAt[slot] as number) <= nowMs) slab.clear(slot);
    const decision = algorithm.check(slab.state, offset, nowMs, p, cost, commit);
    if (decision.allowed && commit && cost > 0) slab.expiresAt[slot] = algorithm.expiresAt(slab.state, offset, p);
    slab.touch(slot, decision.remaining === 0);
    return decision;
  }

  /** A new key, a sliding log, or a check under a block duration (decide has set lastPath for `p`). */
  const decideOther: ContextCheck = (context, key, p, cost, nowMs, commit) => {
    if (lastPath === NUMERIC) return decideNew(key, p, cost, nowMs, commit);
    if (lastPath === LOG) return decideLog(context, key, p, cost, nowMs, commit);
    // Blocked: a blocked key is rejected, and a rejection blocks it.
    const blocked = blocks.check(p.id, key, nowMs, p.limit);
    if (blocked) return blocked;
    const slot = context?.table.get(key);
    const decision =
      p.algorithm === 'sliding-log'
        ? decideLog(context, key, p, cost, nowMs, commit)
        : slot === undefined
          ? decideNew(key, p, cost, nowMs, commit)
          : decideAt(context as PolicyContext, slot, p, cost, nowMs, commit);
    if (!decision.allowed && commit) blocks.block(p.id, key, nowMs + p.blockMs);
    return decision;
  };

  /**
   * A key with no state: decide on zeros and store only what an admitted request wrote, so rejected
   * requests and peeks never grow the store.
   */
  function decideNew(key: string, p: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Decision {
    const algorithm = NUMERIC_ALGORITHMS[p.algorithm as NumericName];
    scratch.fill(0);
    const decision = algorithm.check(scratch, 0, nowMs, p, cost, commit);
    if (decision.allowed && commit && cost > 0) {
      const fresh = store(key, p);
      slab.state.set(scratch, fresh * SLOT_WIDTH);
      slab.expiresAt[fresh] = algorithm.expiresAt(scratch, 0, p);
      slab.touch(fresh, decision.remaining === 0);
    }
    return decision;
  }

  /** A sliding log's check: a stored log is the hot path (find() written out, as in decide). */
  const decideLog: ContextCheck = (context, key, p, cost, nowMs, commit) => {
    const slot = context?.table.get(key);
    if (slot === undefined) return decideNewLog(key, p, cost, nowMs, commit, -1);
    if ((slab.expiresAt[slot] as number) <= nowMs) slab.clear(slot);
    const log = slab.logs[slot];
    if (log === undefined) return decideNewLog(key, p, cost, nowMs, commit, slot);
    const decision = slidingLog.check(log, 0, nowMs, p, cost, commit);
    if (decision.allowed && commit && cost > 0) logTook(slot, key, log, nowMs + p.periodMs);
    slab.touch(slot, decision.remaining === 0);
    return decision;
  };

  /**
   * A stored log took units: it now expires one period after its newest entry, which is at `nowMs`
   * (slidingLog.expiresAt, computed by the caller without a boxed return), and may have grown.
   */
  function logTook(slot: number, key: string, log: SlidingLogState, expiresAt: number): void {
    slab.expiresAt[slot] = expiresAt;
    slab.setBytes(slot, keyBytes(key) + logBytes(log));
    fitBytes(slot);
  }

  /** A key with no log (new, or expired: `slot` is then still its own): one is kept only if it took units. */
  function decideNewLog(
    key: string,
    p: ResolvedPolicy,
    cost: number,
    nowMs: number,
    commit: boolean,
    slot: number,
  ): Decision {
    const log = new SlidingLogState();
    const decision = slidingLog.check(log, 0, nowMs, p, cost, commit);
    if (decision.allowed && commit && cost > 0) {
      const target = slot === -1 ? store(key, p) : slot;
      slab.logs[target] = log;
      slab.expiresAt[target] = slidingLog.expiresAt(log, 0, p);
      slab.setBytes(target, keyBytes(key) + logBytes(log));
      fitBytes(target);
      slab.touch(target, decision.remaining === 0);
    } else if (slot !== -1) {
      slab.touch(slot, decision.remaining === 0);
    }
    return decision;
  }

  function refund(key: string, p: ResolvedPolicy, cost: number, nowMs: number): void {
    const slot = find(p, key, nowMs);
    if (slot === -1) return;
    if (p.algorithm !== 'sliding-log')
      NUMERIC_ALGORITHMS[p.algorithm as NumericName].refund(slab.state, slot * SLOT_WIDTH, nowMs, p, cost);
    else {
      const log = slab.logs[slot];
      if (log) slidingLog.refund(log, 0, nowMs, p, cost);
    }
    slab.touch(slot, false);
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
      const slot = existingContext(p)?.table.get(key);
      if (slot !== undefined) slab.free(slot);
      blocks.unblock(p.id, key);
    },

    acquire(key, limit, leaseMs, nowMs) {
      if (nowMs > (latest[0] as number)) latest[0] = nowMs;
      const d = leases.acquire(key, limit, leaseMs, nowMs);
      if (d.lease !== undefined) fitBytes(-1);
      return d;
    },

    release(lease, nowMs) {
      return leases.release(lease, nowMs);
    },

    stats: () => ({
      keys: slab.size,
      bytes: slab.bytes + contextBytes + blocks.bytes + leases.bytes,
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
      closed = true;
      if (timer) clearInterval(timer);
    },
  };
}
