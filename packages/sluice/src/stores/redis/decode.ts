import type { Decision } from '../../core/decision.js';
import { PACKED_RESET_LIMIT } from './lua.js';

/** Integers of one decision in a script's reply: allowed, remaining, reset, retry, reason, delay (lua.ts). */
export const DECISION_WIDTH = 6;

/** Reads the 6 integers of one decision at `offset` of a script's reply (the layout of lua.ts). */
export function decodeDecision(r: readonly unknown[], offset: number, limit: number): Decision {
  const retry = Number(r[offset + 3]);
  const d: Decision = {
    allowed: Number(r[offset]) === 1,
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

/**
 * A batch script's reply as six integers per decision, the layout every decoder reads: a packed
 * decision (a number ≥ 0: remaining × 2^29 + resetMs, allowed, no delay) is unpacked, a full one (its
 * first integer −1 − allowed) copied, and a refused write's message, after the decisions, kept at the
 * end (PACKED_RESET_LIMIT in lua.ts).
 */
export function expandReply(reply: unknown): unknown[] {
  const r: readonly unknown[] = typeof reply === 'number' ? [reply] : (reply as unknown[]);
  const out: unknown[] = [];
  for (let i = 0; i < r.length; ) {
    const x = r[i];
    if (typeof x !== 'number') {
      out.push(x);
      i++;
    } else if (x >= 0) {
      const reset = x % PACKED_RESET_LIMIT;
      out.push(1, (x - reset) / PACKED_RESET_LIMIT, reset, 0, 0, -1);
      i++;
    } else {
      out.push(-1 - x, r[i + 1], r[i + 2], r[i + 3], r[i + 4], r[i + 5]);
      i += DECISION_WIDTH;
    }
  }
  return out;
}
