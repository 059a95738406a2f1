import type { Decision } from '../../core/decision.js';
import { PACKED_RESET_LIMIT } from './lua.js';

/** Integers of one decision in a script's reply: allowed, remaining, reset, retry, reason, delay (lua.ts). */
export const DECISION_WIDTH = 6;

/** Reads the 6 integers of one decision at `offset` of a script's reply (the layout of lua.ts). */
export function decodeDecision(r: readonly unknown[], offset: number, limit: number): Decision {
  return decisionOf(Number(r[offset]) === 1, r, offset, limit);
}

/**
 * Reads the decision at `offset` of a batch script's reply: one integer ≥ 0 (remaining × 2^29 +
 * resetMs: allowed, no delay), or six led by −1 − allowed (PACKED_RESET_LIMIT in lua.ts).
 */
export function decodeCompact(r: readonly unknown[], offset: number, limit: number): Decision {
  const x = r[offset] as number;
  if (x < 0) return decisionOf(x === -2, r, offset, limit);
  const resetMs = x % PACKED_RESET_LIMIT;
  return { allowed: true, limit, remaining: (x - resetMs) / PACKED_RESET_LIMIT, resetMs, retryAfterMs: 0 };
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
