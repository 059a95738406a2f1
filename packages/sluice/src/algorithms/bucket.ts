import { type Decision, rejection } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
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

/** The rejection of a request that does not fit in the bucket (`after`: its level if admitted). */
function rejected(p: ResolvedPolicy, level: number, after: number, cost: number): Decision {
  const remaining = Math.floor((p.capacityTicks - level) / p.intervalTicks);
  return rejection(
    p.limit,
    p.capacity,
    cost,
    remaining,
    ceilDiv(level, p.scale),
    ceilDiv(after - p.capacityTicks, p.scale),
  );
}

/** Builds the bucket algorithm; `shaping` adds `delayMs` (the leaky bucket's queue position). */
export function createBucket(name: 'token-bucket' | 'leaky-bucket', shaping: boolean): Algorithm {
  return {
    name,
    check(s, o, now, p, cost, commit): Decision {
      const level = levelAt(s, o, now, p);
      const after = level + cost * p.intervalTicks;
      // cost > capacity implies after > capacityTicks: one test keeps the hot path (and its bytecode,
      // which V8 must inline into the store's check) short; rejected() tells the two apart.
      if (after > p.capacityTicks) return rejected(p, level, after, cost);
      const taken = commit && cost > 0;
      if (taken) {
        s[o] = after;
        s[o + 1] = Math.max(now, s[o + 1] as number);
      }
      const held = taken ? after : level;
      const remaining = Math.floor((p.capacityTicks - held) / p.intervalTicks);
      const resetMs = ceilDiv(held, p.scale);
      // What is already queued drains first: this request's turn comes when it has. One literal per
      // shape, so a decision never grows a property after it is made.
      return shaping
        ? { allowed: true, limit: p.limit, remaining, resetMs, retryAfterMs: 0, delayMs: ceilDiv(level, p.scale) }
        : { allowed: true, limit: p.limit, remaining, resetMs, retryAfterMs: 0 };
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
