/**
 * The sliding window counter: the previous window's count, weighted by how much of it the sliding window still covers,
 * plus the current one's, all compared in whole numbers so no rounding lets a request through.
 */
import { type Decision, rejection } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
import { MAX_DEBT } from './debt.js';
import type { Algorithm } from './types.js';

// Slots: [window index, count of the previous window, count of that window].
//
// Cloudflare's approximation of a sliding window: estimate = prev * (period - elapsed) / period + curr,
// where elapsed = now mod period. Everything is compared multiplied by `period`, so it stays in exact
// integers: allowed iff prev * (period - elapsed) + (curr + cost) * period <= limit * period.

/** Sliding window counter: two counters per key, close to a sliding log at a fraction of its memory. */
export const slidingWindow: Algorithm = {
  name: 'sliding-window',

  check(s, o, now, p, cost, commit): Decision {
    const P = p.periodMs;
    const window = Math.floor(now / P);
    const elapsed = now - window * P;
    // Read the two counts as of `window`: the stored window may be this one, the one before, or older.
    const stored = s[o] as number;
    const prev = stored === window ? (s[o + 1] as number) : stored === window - 1 ? (s[o + 2] as number) : 0;
    const curr = stored === window ? (s[o + 2] as number) : 0;
    // cost > capacity implies this test: one test keeps the hot path (and its bytecode, which V8 must
    // inline into the store's check) short; rejected() tells the two apart.
    if (prev * (P - elapsed) + (curr + cost) * P > p.limit * P) return rejected(p, prev, curr, elapsed, cost);
    const taken = commit ? cost : 0;
    if (taken > 0) {
      s[o] = window;
      s[o + 1] = prev;
      s[o + 2] = curr + taken;
    }
    return {
      allowed: true,
      limit: p.limit,
      remaining: remainingOf(p, prev, curr + taken, elapsed),
      resetMs: resetOf(P, prev, curr + taken, elapsed),
      retryAfterMs: 0,
    };
  },

  charge(s, o, now, p, cost) {
    // Past the limit is debt: it weighs on this window and, fading, on the next (two windows hold no more).
    const P = p.periodMs;
    const window = Math.floor(now / P);
    const stored = s[o] as number;
    const prev = stored === window ? (s[o + 1] as number) : stored === window - 1 ? (s[o + 2] as number) : 0;
    const curr = stored === window ? (s[o + 2] as number) : 0;
    s[o] = window;
    s[o + 1] = prev;
    s[o + 2] = Math.min(curr + cost, p.limit + Math.floor(MAX_DEBT / P));
    return slidingWindow.check(s, o, now, p, 0, false);
  },

  refund(s, o, now, p, cost, takenAt = now) {
    // Back to the window that counted the units: the current one, or the previous one while it still weighs; a
    // window older than that weighs nothing any more, and the current one never held them.
    const window = Math.floor(now / p.periodMs);
    const taken = Math.floor(Math.min(takenAt, now) / p.periodMs);
    const stored = s[o] as number;
    if (taken < window - 1) return;
    // The stored window's own count (it is the current window or the previous one), or the previous one's count
    // kept beside the current window's.
    if (taken === stored) s[o + 2] = Math.max(0, (s[o + 2] as number) - cost);
    else if (taken === window - 1 && stored === window) s[o + 1] = Math.max(0, (s[o + 1] as number) - cost);
  },

  expiresAt(s, o, p) {
    // The stored window's count weighs on the next window, and is gone after that.
    return ((s[o] as number) + 2) * p.periodMs;
  },
};

/** The rejection of a request over the weighted estimate (or over the capacity). */
function rejected(p: ResolvedPolicy, prev: number, curr: number, elapsed: number, cost: number): Decision {
  const remaining = remainingOf(p, prev, curr, elapsed);
  const resetMs = resetOf(p.periodMs, prev, curr, elapsed);
  return rejection(
    p.limit,
    p.capacity,
    cost,
    remaining,
    resetMs,
    Math.ceil(retryAfterOf(p, prev, curr, elapsed, cost)),
  );
}

// The counts come from a Float64Array: remainingOf and resetOf round (identities on whole numbers; a
// fractional clock's reset rounds up) so that V8 stores small integers in the decision, not boxed doubles.

/** Largest n with prev*(P-elapsed) + (curr+n)*P <= limit*P. */
function remainingOf(p: ResolvedPolicy, prev: number, curr: number, elapsed: number): number {
  const P = p.periodMs;
  return Math.max(0, Math.floor((p.limit * P - prev * (P - elapsed)) / P - curr));
}

/** Until both counters have aged out: the end of the next window if the current one has counts. */
function resetOf(P: number, prev: number, curr: number, elapsed: number): number {
  if (curr > 0) return Math.ceil(2 * P - elapsed);
  if (prev > 0) return Math.ceil(P - elapsed);
  return 0;
}

/**
 * The first instant the same request fits: later in this window as the previous window's weight
 * fades, else in the next window (where today's count becomes the previous one), else two windows on.
 */
function retryAfterOf(p: ResolvedPolicy, prev: number, curr: number, elapsed: number, cost: number): number {
  const P = p.periodMs;
  const roomNow = (p.limit - curr - cost) * P;
  if (roomNow >= 0 && prev > 0) {
    const at = P - Math.floor(roomNow / prev);
    if (at < P) return at - elapsed;
  }
  if (curr === 0) return P - elapsed;
  const roomNext = (p.limit - cost) * P;
  const atNext = Math.max(0, P - Math.floor(roomNext / curr));
  if (atNext < P) return P - elapsed + atNext;
  return 2 * P - elapsed;
}
