/**
 * `'eventual'` mode: each region decides against its own view of a per-window G-counter (its own
 * counts, exact, and the other regions' as of their last sync) in one round trip to its own Redis.
 * The Lua only tests and takes (eventual-lua.ts); the decision itself — remaining, reset, retry — is
 * the pure algorithm step run on the totals the script saw, so it is the memory store's to the number.
 */
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { slidingWindow } from '../../algorithms/sliding-window.js';
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { AlgorithmName, ResolvedPolicy } from '../../core/policy.js';
import { hexArg } from '../redis/hex.js';
import type { Runner } from '../redis/runner.js';
import type { StoreItem } from '../store.js';
import type { DecidedEvent } from './escrow.js';
import { EVENTUAL_CHECK, EVENTUAL_REFUND, EVENTUAL_RESET } from './eventual-lua.js';
import { counterKey, markerKey, regionBlockKey, tagOf } from './keys.js';

/** The algorithms whose state is a count per window, and so a G-counter: the ones eventual mode takes. */
export const COUNTER_ALGORITHMS: ReadonlySet<AlgorithmName> = new Set(['fixed-window', 'sliding-window']);

/** Refuses a policy eventual mode cannot merge, with a message that says what to do instead. */
export function assertCounterPolicy(policy: ResolvedPolicy): void {
  if (!COUNTER_ALGORITHMS.has(policy.algorithm)) {
    throw new SluiceError(
      'ERR_SLUICE_MULTI_REGION_ALGORITHM',
      `multi-region 'eventual' mode merges counters, so it takes fixed-window and sliding-window only, not ${policy.algorithm}: use mode 'escrow' (every algorithm, never over the limit) or a counter algorithm`,
      { option: 'algorithm' },
    );
  }
}

/** Where one decision's counters live. */
export interface CounterKeys {
  readonly cur: string;
  readonly prev: string;
  readonly marker: string;
  readonly bkey: string;
  readonly window: number;
}

/** The keys of (key, policy) at `nowMs`. */
export function counterKeys(prefix: string, key: string, policy: ResolvedPolicy, nowMs: number): CounterKeys {
  const tag = tagOf(prefix, key);
  const window = Math.floor(nowMs / policy.periodMs);
  return {
    cur: counterKey(tag, policy.id, window),
    prev: counterKey(tag, policy.id, window - 1),
    marker: markerKey(tag, policy.id),
    bkey: regionBlockKey(tag, policy.id),
    window,
  };
}

const ALG_CODE = { 'fixed-window': '1', 'sliding-window': '2' } as Record<string, string>;

/** What the check script saw for one item. */
interface Seen {
  status: number;
  prev: number;
  curr: number;
  blockedUntil: number;
}

/** The decision the pure algorithm makes on the totals the region saw. */
function shape(policy: ResolvedPolicy, seen: Seen, cost: number, nowMs: number, took: boolean): Decision {
  if (seen.status === 2) {
    const wait = seen.blockedUntil - nowMs;
    return { allowed: false, limit: policy.limit, remaining: 0, resetMs: wait, retryAfterMs: wait, reason: 'blocked' };
  }
  const window = Math.floor(nowMs / policy.periodMs);
  // Counts merged from several regions can pass the limit (by at most the bound); a decision still
  // never reports a negative remaining.
  if (policy.algorithm === 'fixed-window') {
    return fixedWindow.check([window, Math.min(seen.curr, policy.limit)], 0, nowMs, policy, cost, took);
  }
  return slidingWindow.check([window, seen.prev, seen.curr], 0, nowMs, policy, cost, took);
}

/** The eventual-mode operations of one region. */
export interface EventualRegion {
  /** Decides items (all or nothing when `all`); calls `touched` with every hash it added to. */
  check(items: readonly StoreItem[], nowMs: number, commit: boolean, all: boolean): Promise<Decision[]>;
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, takenAtMs?: number): Promise<void>;
  reset(key: string, policy: ResolvedPolicy): Promise<void>;
}

/** The sub-counters count whole units: a cost that is not one is refused, with a coded error. */
function wholeCost(cost: number): number {
  if (!Number.isSafeInteger(cost) || cost < 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_COST',
      `cost: ${cost} is not a whole number ≥ 0 (eventual mode counts whole units)`,
    );
  }
  return cost;
}

/** Throws the coded error eventual mode answers an item it cannot decide with (its algorithm, its cost). */
export function assertEventualItem(policy: ResolvedPolicy, cost: number): void {
  assertCounterPolicy(policy);
  wholeCost(cost);
}

/**
 * The eventual-mode operations against the local region's Redis. `graceMs` keeps windows that long
 * past their end, so late syncs still find them; `touched(hashKey, window)` hears of every count
 * this region changed, for the sync loop to send.
 */
export function createEventualRegion(
  runner: Runner,
  prefix: string,
  region: string,
  graceMs: number,
  touched: (hashKey: string) => void,
  onDecided: ((event: DecidedEvent) => void) | undefined,
): EventualRegion {
  const grace = String(graceMs);
  /** Each policy's fields of a check item (eventual-lua.ts), in hexadecimal, built once per policy object. */
  const fields = new WeakMap<ResolvedPolicy, readonly string[]>();
  const policyFields = (p: ResolvedPolicy) => {
    let f = fields.get(p);
    if (f === undefined) {
      f = [ALG_CODE[p.algorithm] as string, ...[p.limit, p.periodMs, p.capacity, p.blockMs].map(hexArg)];
      fields.set(p, f);
    }
    return f;
  };
  return {
    async check(items, nowMs, commit, all) {
      const keys: string[] = [];
      const args = [String(nowMs), grace, region, all ? '1' : '0', commit ? '1' : '0'];
      const where: CounterKeys[] = [];
      for (const { key, policy, cost } of items) {
        assertCounterPolicy(policy);
        const k = counterKeys(prefix, key, policy, nowMs);
        where.push(k);
        keys.push(k.cur, k.prev, k.marker, k.bkey);
        for (const a of policyFields(policy)) args.push(a);
        args.push(cost === 1 ? '1' : hexArg(wholeCost(cost)));
      }
      const r = (await runner.script(EVENTUAL_CHECK, keys, args)) as unknown[];
      const seen: Seen[] = items.map((_, i) => ({
        status: Number(r[i * 4]),
        prev: Number(r[i * 4 + 1]),
        curr: Number(r[i * 4 + 2]),
        blockedUntil: Number(r[i * 4 + 3]),
      }));
      const everyFits = seen.every((s) => s.status === 1);
      return items.map((item, i) => {
        const s = seen[i] as Seen;
        const took = commit && s.status === 1 && (!all || everyFits);
        if (took && item.cost > 0) touched((where[i] as CounterKeys).cur);
        const decision = shape(item.policy, s, item.cost, nowMs, took);
        onDecided?.({ key: item.key, policy: item.policy, cost: item.cost, decision, atMs: nowMs });
        return decision;
      });
    },

    async refund(key, policy, cost, nowMs, takenAtMs = nowMs) {
      assertCounterPolicy(policy);
      // Back to the window that counted the units (each window is its own hash): a refund after the window rolled
      // frees nothing in the new one. Older than the previous window, it weighs nothing any more.
      const at = Math.min(takenAtMs, nowMs);
      if (Math.floor(at / policy.periodMs) < Math.floor(nowMs / policy.periodMs) - 1) return;
      const { cur } = counterKeys(prefix, key, policy, at);
      const given = Number(await runner.script(EVENTUAL_REFUND, [cur], [region, String(wholeCost(cost))]));
      if (given > 0) touched(cur);
    },

    async reset(key, policy) {
      assertCounterPolicy(policy);
      const tag = tagOf(prefix, key);
      const changed = (await runner.script(
        EVENTUAL_RESET,
        [markerKey(tag, policy.id), regionBlockKey(tag, policy.id)],
        [region],
      )) as string[];
      for (const k of changed) touched(k);
    },
  };
}
