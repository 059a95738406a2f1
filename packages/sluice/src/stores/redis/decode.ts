import type { Decision } from '../../core/decision.js';

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
