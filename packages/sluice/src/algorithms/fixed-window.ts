/**
 * The fixed window algorithm: one count per key in windows aligned to the epoch, the cheapest step of all, at the price
 * of letting up to twice the limit through across a window boundary.
 */
import { type Decision, rejection } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
import { MAX_DEBT } from './debt.js';
import type { Algorithm } from './types.js';

// Slots: [window index, count in that window]. Windows are aligned to the epoch: floor(now / period).

/** Fixed window: at most `limit` units per aligned window; cheap, but lets 2×limit through across a boundary. */
export const fixedWindow: Algorithm = {
  name: 'fixed-window',

  check(s, o, now, p, cost, commit): Decision {
    const window = Math.floor(now / p.periodMs);
    const count = s[o] === window ? (s[o + 1] as number) : 0;
    // cost > capacity implies count + cost > limit: one test keeps the hot path (and its bytecode, which
    // V8 must inline into the store's check) short; rejected() tells the two apart.
    if (count + cost > p.limit) return rejected(p, count, cost, window, now);
    const taken = commit ? cost : 0;
    if (taken > 0) {
      s[o] = window;
      s[o + 1] = count + taken;
    }
    const after = count + taken;
    // Math.floor and Math.ceil are identities on these whole numbers (a fractional clock's reset rounds
    // up, as every algorithm's does): they hand V8 small integers, which it stores in the decision as
    // they are, where a count read from the Float64Array would be stored as a boxed double — one more
    // allocation per check for every decision of the process (they share one hidden class).
    return {
      allowed: true,
      limit: p.limit,
      remaining: Math.floor(p.limit - after),
      resetMs: after > 0 ? Math.ceil((window + 1) * p.periodMs - now) : 0,
      retryAfterMs: 0,
    };
  },

  charge(s, o, now, p, cost) {
    // A count past the limit is debt until the window ends: the window's state holds no more.
    const window = Math.floor(now / p.periodMs);
    const count = s[o] === window ? (s[o + 1] as number) : 0;
    s[o] = window;
    s[o + 1] = Math.min(count + cost, p.limit + MAX_DEBT);
    return fixedWindow.check(s, o, now, p, 0, false);
  },

  refund(s, o, now, p, cost, takenAt = now) {
    // Units taken in an earlier window were counted there: the current window never held them.
    const window = Math.floor(now / p.periodMs);
    if (s[o] === window && Math.floor(Math.min(takenAt, now) / p.periodMs) === window) {
      s[o + 1] = Math.max(0, (s[o + 1] as number) - cost);
    }
  },

  expiresAt(s, o, p) {
    return ((s[o] as number) + 1) * p.periodMs;
  },
};

/** The rejection of a request that does not fit in the current window (or in any window). */
function rejected(p: ResolvedPolicy, count: number, cost: number, window: number, now: number): Decision {
  // Whole numbers, as in check(): small integers, not boxed doubles, in the decision.
  const windowEndMs = Math.ceil((window + 1) * p.periodMs - now);
  const remaining = Math.max(0, Math.floor(p.limit - count));
  // In the next window the count starts at 0, so a cost within the capacity fits there.
  return rejection(p.limit, p.capacity, cost, remaining, count > 0 ? windowEndMs : 0, windowEndMs);
}
