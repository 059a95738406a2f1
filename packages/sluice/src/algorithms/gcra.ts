/**
 * GCRA (the generic cell rate algorithm): the token bucket's decisions, request for request, kept as one number per
 * key, the theoretical arrival time of the next request.
 */
import { type Decision, rejection } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
import { MAX_DEBT } from './debt.js';
import type { Algorithm } from './types.js';

// Slots: [theoretical arrival time (TAT), in ticks since the epoch]. One number per key.
//
// The generic cell rate algorithm: emission interval T = intervalTicks, tolerance τ = capacityTicks.
// A request of cost c is conforming iff max(TAT, now) + c·T − now ≤ τ; then TAT becomes that sum.
// max(TAT, now) − now is exactly a token bucket's spent tokens (in ticks), hence identical decisions.

/** GCRA: a token bucket's behaviour stored as a single timestamp. */
export const gcra: Algorithm = {
  name: 'gcra',

  check(s, o, now, p, cost, commit): Decision {
    const nowTicks = now * p.scale;
    const tat = Math.max(s[o] as number, nowTicks);
    const newTat = tat + cost * p.intervalTicks;
    // cost > capacity implies newTat − now > τ: one test keeps the hot path (and its bytecode, which V8
    // must inline into the store's check) short; rejected() tells the two apart.
    if (newTat - nowTicks > p.capacityTicks) return rejected(p, tat - nowTicks, newTat - nowTicks, cost);
    const taken = commit && cost > 0;
    if (taken) s[o] = newTat;
    const held = (taken ? newTat : tat) - nowTicks;
    return {
      allowed: true,
      limit: p.limit,
      remaining: Math.floor((p.capacityTicks - held) / p.intervalTicks),
      resetMs: Math.ceil(held / p.scale),
      retryAfterMs: 0,
    };
  },

  charge(s, o, now, p, cost) {
    // A TAT past now + τ is debt: every request is refused until the clock has caught up with it.
    const nowTicks = now * p.scale;
    const held = Math.max(s[o] as number, nowTicks) - nowTicks;
    s[o] = nowTicks + Math.min(held + cost * p.intervalTicks, p.capacityTicks + MAX_DEBT);
    return gcra.check(s, o, now, p, 0, false);
  },

  refund(s, o, now, p, cost) {
    const nowTicks = now * p.scale;
    s[o] = Math.max(nowTicks, Math.max(s[o] as number, nowTicks) - cost * p.intervalTicks);
  },

  expiresAt(s, o, p) {
    return Math.ceil((s[o] as number) / p.scale);
  },
};

/** The rejection of a request over the tolerance (`after`: its backlog if admitted, in ticks). */
function rejected(p: ResolvedPolicy, backlog: number, after: number, cost: number): Decision {
  const remaining = Math.max(0, Math.floor((p.capacityTicks - backlog) / p.intervalTicks));
  const resetMs = Math.ceil(backlog / p.scale);
  return rejection(p.limit, p.capacity, cost, remaining, resetMs, Math.ceil((after - p.capacityTicks) / p.scale));
}
