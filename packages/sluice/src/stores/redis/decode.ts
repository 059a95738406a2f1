/**
 * Reading decisions out of a Lua script's reply: six integers per decision, or, from a batch script, a single packed
 * integer for the usual allowed decision.
 */
import type { Decision } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import { PACKED_RESET_LIMIT } from './lua.js';

/** Integers of one decision in a script's reply: allowed, remaining, reset, retry, reason, delay (lua.ts). */
export const DECISION_WIDTH = 6;

/** Reads the 6 integers of one decision at `offset` of a script's reply (the layout of lua.ts). */
export function decodeDecision(r: readonly unknown[], offset: number, limit: number): Decision {
  return decisionOf(Number(r[offset]) === 1, r, offset, limit);
}

/**
 * Reads the decision at `offset` of a batch script's reply: one integer ≥ 0 for an allowed decision
 * (PACKED_RESET_LIMIT in lua.ts: for the leaky bucket, with what its delay needs), or six led by
 * −1 − allowed. `cost` and `commit` are the check's: the leaky bucket's delay depends on what it added.
 */
export function decodeCompact(
  r: readonly unknown[],
  offset: number,
  policy: ResolvedPolicy,
  cost: number,
  commit: boolean,
): Decision {
  const x = r[offset] as number;
  if (x < 0) return decisionOf(x === -2, r, offset, policy.limit);
  const low = x % PACKED_RESET_LIMIT;
  const remaining = (x - low) / PACKED_RESET_LIMIT;
  if (policy.algorithm !== 'leaky-bucket') {
    return { allowed: true, limit: policy.limit, remaining, resetMs: low, retryAfterMs: 0 };
  }
  const resetMs = Math.floor(low / 2);
  const added = commit && cost > 0 ? cost * policy.intervalTicks : 0;
  const delayMs = resetMs - Math.floor(added / policy.scale) - (low - resetMs * 2);
  return { allowed: true, limit: policy.limit, remaining, resetMs, retryAfterMs: 0, delayMs };
}

/** How many integers the decision at `offset` of a batch script's reply takes. */
export function compactWidth(r: readonly unknown[], offset: number): number {
  return (r[offset] as number) < 0 ? DECISION_WIDTH : 1;
}

/** True when Redis left the decision at `offset` undecided: it refused the write it needed (lua.ts). */
export function undecided(r: readonly unknown[], offset: number, compact: boolean): boolean {
  return (!compact || (r[offset] as number) < 0) && Number(r[offset + 4]) === 3;
}

/** A decision from `allowed` and the five integers after `offset`: remaining, reset, retry, reason, delay. */
function decisionOf(allowed: boolean, r: readonly unknown[], offset: number, limit: number): Decision {
  const retry = Number(r[offset + 3]);
  const d: Decision = {
    allowed,
    limit,
    remaining: Number(r[offset + 1]),
    resetMs: Number(r[offset + 2]),
    retryAfterMs: retry === -1 ? Number.POSITIVE_INFINITY : retry,
  };
  const reason = Number(r[offset + 4]);
  if (reason === 1) d.reason = 'cost-exceeds-capacity';
  else if (reason === 2) d.reason = 'blocked';
  const delay = Number(r[offset + 5]);
  if (delay !== -1) d.delayMs = delay;
  return d;
}
