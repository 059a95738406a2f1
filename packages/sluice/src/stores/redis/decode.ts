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
 * A batch script's reply as the table of decisions: a lone allowed decision without a delay comes
 * packed in one integer, remaining × 2^29 + resetMs (PACKED_RESET_LIMIT in lua.ts).
 */
export function unpackReply(reply: unknown): readonly unknown[] {
  if (typeof reply !== 'number') return reply as unknown[];
  const reset = reply % PACKED_RESET_LIMIT;
  return [1, (reply - reset) / PACKED_RESET_LIMIT, reset, 0, 0, -1];
}
