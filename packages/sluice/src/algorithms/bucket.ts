/**
 * The token and leaky buckets as one pure step over two numbers per key, a level in integer ticks and its last update:
 * the level drains at the refill rate and each admitted request adds its cost; the leaky bucket also tells a request
 * how long to wait for its turn.
 */
import { type Decision, rejection } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
import { MAX_DEBT } from './debt.js';
import type { Algorithm, Slots } from './types.js';

// Slots: [level in ticks, last update in ms]. The level is what the bucket holds: for a leaky bucket
// the queue waiting to drain, for a token bucket the tokens already spent (capacity − tokens). Either
// way a fresh key is all zeros, the level drains at `scale` ticks per ms, and a request of `cost`
// adds cost × intervalTicks. Integer ticks: see ResolvedPolicy.

/** The level at `now`, after draining since the last update (a clock that went back drains nothing). */
function levelAt(s: Slots, o: number, now: number, p: ResolvedPolicy): number {
  const elapsed = Math.max(0, now - (s[o + 1] as number));
  return Math.max(0, (s[o] as number) - elapsed * p.scale);
}

const ceilDiv = (a: number, b: number) => Math.ceil(a / b);

/** Unit-cost requests that fit on top of `level` (0 for a bucket in debt: its level past the capacity). */
const remainingOf = (p: ResolvedPolicy, level: number) =>
  Math.max(0, Math.floor((p.capacityTicks - level) / p.intervalTicks));

/** The rejection of a request that does not fit in the bucket (`after`: its level if admitted). */
function rejected(p: ResolvedPolicy, level: number, after: number, cost: number): Decision {
  return rejection(
    p.limit,
    p.capacity,
    cost,
    remainingOf(p, level),
    ceilDiv(level, p.scale),
    ceilDiv(after - p.capacityTicks, p.scale),
  );
}

/** Writes an admitted request's level (when it takes units); returns the level the bucket holds now. */
function admit(s: Slots, o: number, now: number, level: number, after: number, taken: boolean): number {
  if (!taken) return level;
  s[o] = after;
  s[o + 1] = Math.max(now, s[o + 1] as number);
  return after;
}

/**
 * The token bucket's step. cost > capacity implies after > capacityTicks: one test keeps the hot path
 * (and its bytecode, which V8 must inline into the store's check) short; rejected() tells the two apart.
 */
function tokenCheck(s: Slots, o: number, now: number, p: ResolvedPolicy, cost: number, commit: boolean): Decision {
  // levelAt(), written out: called rather than inlined it returns a boxed double.
  const level = Math.max(0, (s[o] as number) - Math.max(0, now - (s[o + 1] as number)) * p.scale);
  const after = level + cost * p.intervalTicks;
  if (after > p.capacityTicks) return rejected(p, level, after, cost);
  const held = admit(s, o, now, level, after, commit && cost > 0);
  return {
    allowed: true,
    limit: p.limit,
    remaining: remainingOf(p, held),
    resetMs: ceilDiv(held, p.scale),
    retryAfterMs: 0,
  };
}

/** The token bucket's step, plus the request's turn in the queue: what is queued drains first. */
function leakyCheck(s: Slots, o: number, now: number, p: ResolvedPolicy, cost: number, commit: boolean): Decision {
  // levelAt(), written out as in tokenCheck.
  const level = Math.max(0, (s[o] as number) - Math.max(0, now - (s[o + 1] as number)) * p.scale);
  const after = level + cost * p.intervalTicks;
  if (after > p.capacityTicks) return rejected(p, level, after, cost);
  const held = admit(s, o, now, level, after, commit && cost > 0);
  const remaining = remainingOf(p, held);
  const resetMs = ceilDiv(held, p.scale);
  return { allowed: true, limit: p.limit, remaining, resetMs, retryAfterMs: 0, delayMs: ceilDiv(level, p.scale) };
}

/** Builds the bucket algorithm; `shaping` adds `delayMs` (the leaky bucket's queue position). */
export function createBucket(name: 'token-bucket' | 'leaky-bucket', shaping: boolean): Algorithm {
  // One step per bucket, each with the one decision literal it returns (so a decision never grows a
  // property after it is made): with both in one step, its bytecode was over what V8 inlines into
  // an awaited check along with the store's path.
  const check = shaping ? leakyCheck : tokenCheck;
  return {
    name,
    check,

    charge(s, o, now, p, cost) {
      // Past the capacity is debt: the level drains at the same rate, so later requests wait until it has.
      s[o] = Math.min(levelAt(s, o, now, p) + cost * p.intervalTicks, p.capacityTicks + MAX_DEBT);
      s[o + 1] = Math.max(now, s[o + 1] as number);
      return check(s, o, now, p, 0, false);
    },

    refund(s, o, now, p, cost) {
      s[o] = Math.max(0, levelAt(s, o, now, p) - cost * p.intervalTicks);
      s[o + 1] = Math.max(now, s[o + 1] as number);
    },

    expiresAt(s, o, p) {
      return (s[o + 1] as number) + ceilDiv(s[o] as number, p.scale);
    },
  };
}
