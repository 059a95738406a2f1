/**
 * The compact memory store, for edge bundles (sluice/hono on workerd and browsers): the memory store's decisions from
 * the same pure algorithm steps, in about 3 KB minified instead of the full store's 17 KB. Keys live in two Maps whose
 * insertion order is the LRU (within maxKeys and an estimate of maxBytes), and expired state is dropped lazily (no sweep timer). It
 * keeps no concurrency leases (`acquire` throws ERR_SLUICE_STORE_UNSUPPORTED): the edge build has no concurrency option.
 * Servers keep the full store (memory-store.ts): sampled eviction by quota used, O(log n) leases, stats.
 */
import { NUMERIC_ALGORITHMS, SLOT_WIDTH, SlidingLogState, slidingLog } from '../../algorithms/index.js';
import type { Algorithm, Slots } from '../../algorithms/types.js';
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { StoreItem } from '../store.js';
import type { MemoryStore } from './memory-store.js';

/** The compact store's methods answer synchronously, as the full memory store's do (it has no stats or sweep, and no leases). */
export type CompactMemoryStore = Omit<MemoryStore, 'stats' | 'sweep'>;

type KeyState = Slots | SlidingLogState;

/**
 * A stored key: its id in the Map, its algorithm's state, when that state equals a fresh one, until when it is blocked,
 * and the bytes it was counted at.
 */
interface Entry {
  k: string;
  s: KeyState;
  e: number;
  b: number;
  z: number;
}

/** How many of the least recently used keys a store at maxKeys looks at for an expired one (memory-store.ts: 5 too). */
const SAMPLES = 5;

const stepOf = (p: ResolvedPolicy): Algorithm<KeyState> =>
  (p.algorithm === 'sliding-log' ? slidingLog : NUMERIC_ALGORITHMS[p.algorithm]) as Algorithm<KeyState>;

/**
 * The counters and blocks of every (policy, key), bounded by `max` keys and about `maxBytes`. Forgetting a key means its next request
 * finds a fresh state (a full quota, no block), exactly what the full store's eviction does, so the store forgets in
 * the order that loses least: an expired key among the few least recently used (nothing lost), else the least
 * recently used key with quota left, and a key at its limit or blocked only when no other is stored (`held`, as the
 * full store's protected list), so a flood of throw-away keys cannot hand `login:alice` a fresh quota.
 */
function keyTable(max: number, maxBytes: number) {
  const open = new Map<string, Entry>();
  const held = new Map<string, Entry>();
  // Estimated bytes of what is stored: a sliding log grows with its admitted requests (as memory-decider counts it).
  let bytes = 0;
  const sizeOf = (v: Entry) => 100 + v.k.length + (v.s instanceof SlidingLogState ? 8 * v.s.entries.length : 0);
  const drop = (map: Map<string, Entry>, v: Entry) => {
    const had = map.delete(v.k);
    if (had) bytes -= v.z;
    return had;
  };
  // The length prefix ends the policy id unambiguously, whatever characters the id and the key hold.
  const idOf = (key: string, p: ResolvedPolicy) => `${p.id.length}:${p.id}${key}`;
  const stored = (v: Entry) => open.has(v.k) || held.has(v.k);

  /** The entry of (p, key) (a new one, not stored, for a key not stored), its state fresh again once expired. */
  const entry = (key: string, p: ResolvedPolicy, now: number): Entry => {
    const k = idOf(key, p);
    const v = open.get(k) ?? held.get(k) ?? { k, s: [], e: 0, b: 0, z: 0 };
    if (v.e <= now) {
      v.s = stepOf(p) === slidingLog ? new SlidingLogState() : new Float64Array(SLOT_WIDTH);
      v.e = 0;
    }
    return v;
  };

  const forget = (now: number) => {
    let victim: [Map<string, Entry>, Entry] | undefined;
    for (const map of [open, held]) {
      let n = 0;
      for (const v of map.values()) {
        if (v.e <= now && v.b <= now) return drop(map, v);
        victim ??= [map, v];
        if (++n >= SAMPLES) break;
      }
    }
    return victim !== undefined && drop(victim[0], victim[1]);
  };

  /** Stores `v` as the most recently used key, on the list its last decision puts it. */
  const put = (v: Entry, now: number, atLimit: boolean) => {
    if (!(drop(open, v) || drop(held, v)) && open.size + held.size >= max) forget(now);
    v.z = sizeOf(v);
    bytes += v.z;
    // Past maxBytes, forget others (in the same order) until it fits; a single key larger than it stays.
    while (bytes > maxBytes && forget(now));
    (atLimit || v.b > now ? held : open).set(v.k, v);
  };

  const remove = (key: string, p: ResolvedPolicy) => {
    const k = idOf(key, p);
    const v = open.get(k) ?? held.get(k);
    if (v !== undefined && !drop(open, v)) drop(held, v);
  };
  return { entry, stored, put, remove };
}

/** Every algorithm's step on the key table's states, as the full store's decider takes them (memory-decider.ts). */
function compactCounters(max: number, maxBytes: number) {
  const { entry, stored, put, remove } = keyTable(max, maxBytes);
  let closed = false;
  const usable = () => {
    if (closed) throw new SluiceError('ERR_SLUICE_STORE_CLOSED', 'store closed');
  };

  return {
    check(key: string, p: ResolvedPolicy, cost: number, now: number, commit: boolean): Decision {
      usable();
      const v = entry(key, p, now);
      const wait = v.b - now;
      if (p.blockMs > 0 && wait > 0) {
        return { allowed: false, limit: p.limit, remaining: 0, resetMs: wait, retryAfterMs: wait, reason: 'blocked' };
      }
      const step = stepOf(p);
      const d = step.check(v.s, 0, now, p, cost, commit);
      // A key is stored once it takes units (or is blocked): rejections and peeks of new keys never grow the store.
      if (d.allowed && commit && cost > 0) v.e = step.expiresAt(v.s, 0, p);
      else if (!d.allowed && commit && p.blockMs > 0) v.b = now + p.blockMs;
      else if (!stored(v)) return d;
      put(v, now, d.remaining === 0);
      return d;
    },
    /** Blocks a key rejected by checkMany (whose looks do not block), under a policy with a block duration. */
    block(key: string, p: ResolvedPolicy, now: number) {
      if (p.blockMs > 0) {
        const v = entry(key, p, now);
        v.b = now + p.blockMs;
        put(v, now, true);
      }
    },
    charge(key: string, p: ResolvedPolicy, cost: number, now: number): Decision {
      usable();
      const v = entry(key, p, now);
      const step = stepOf(p);
      if (cost <= 0 && !stored(v)) return step.check(v.s, 0, now, p, 0, false);
      const d = step.charge(v.s, 0, now, p, cost);
      v.e = step.expiresAt(v.s, 0, p);
      put(v, now, d.remaining === 0);
      return d;
    },
    refund(key: string, p: ResolvedPolicy, cost: number, now: number, takenAt?: number) {
      // An expired key refunds into a fresh state and keeps expiresAt 0: its next check starts afresh, as in the full store.
      const v = entry(key, p, now);
      if (stored(v)) {
        stepOf(p).refund(v.s, 0, now, p, cost, takenAt);
        put(v, now, false);
      }
    },
    reset: remove,
    close() {
      closed = true;
    },
  };
}

function noLeases(): never {
  throw new SluiceError('ERR_SLUICE_STORE_UNSUPPORTED', 'this memory store keeps no leases; use createMemoryStore()');
}

/**
 * Creates the compact memory store: the same decisions as `createMemoryStore`, synchronously, within `maxKeys` keys
 * and about `maxBytes`; no leases. Internal: the edge build of sluice/hono uses it.
 * @param options.maxKeys - most keys kept at once (see keyTable for which are forgotten). @default 1_000_000
 * @param options.maxBytes - most bytes they take, estimated (sliding logs grow with their requests). @default 128 MiB
 */
export function createCompactMemoryStore(options: { maxKeys?: number; maxBytes?: number } = {}): CompactMemoryStore {
  const max = options.maxKeys ?? 1_000_000;
  const maxBytes = options.maxBytes ?? 128 * 1024 * 1024;
  if (!(max >= 1 && maxBytes >= 1)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'maxKeys and maxBytes must be ≥ 1', { option: 'maxKeys' });
  }
  const c = compactCounters(max, maxBytes);
  const check = c.check;

  return {
    name: 'memory',
    synchronous: true,
    check,
    // All or nothing, as the full store's checkAllOrNothing: look first, block the rejected, take only if all fit.
    checkMany(items, now, commit) {
      const one = (i: StoreItem, take: boolean) => check(i.key, i.policy, i.cost, now, take);
      const looks = items.map((i) => one(i, false));
      if (!commit) return looks;
      if (looks.some((d) => !d.allowed)) {
        items.forEach((i, n) => {
          if (!looks[n]?.allowed) c.block(i.key, i.policy, now);
        });
        return looks;
      }
      const taken: Decision[] = [];
      for (const i of items) {
        const d = one(i, true);
        taken.push(d);
        // Only when one (policy, key) is listed twice and the second does not fit: give the others back.
        if (!d.allowed) {
          for (const done of items.slice(0, taken.length - 1)) c.refund(done.key, done.policy, done.cost, now);
          return taken.concat(looks.slice(taken.length));
        }
      }
      return taken;
    },
    charge: (items, now) => items.map((i) => c.charge(i.key, i.policy, i.cost, now)),
    refund: c.refund,
    refundMany(items, now) {
      for (const i of items) c.refund(i.key, i.policy, i.cost, now, i.takenAtMs);
    },
    reset: c.reset,
    // Counters only: the edge build has no concurrency option, and leases would cost its bundle 0.4 KiB.
    acquire: noLeases,
    release: noLeases,
    async close() {
      c.close();
    },
  };
}
