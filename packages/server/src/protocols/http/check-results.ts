/** The results `POST /v1/check` answers per item: a decision as JSON, a done, a release, a settle, or a coded error. */
import type { Decision } from 'sluice';
import { isSluiceError } from 'sluice';

/** One result of `POST /v1/check`: a decision, or why this one check could not be made. */
export type CheckResult =
  | {
      allowed: boolean;
      limit: number;
      remaining: number;
      resetMs: number;
      /** `null` when the request can never pass (its cost exceeds the capacity). */
      retryAfterMs: number | null;
      delayMs?: number;
      reason?: string;
      degraded?: boolean;
      /** `acquire`: the lease to give back with `release`. */
      lease?: { id: string; expiresAt: number };
      /** `reserve`, allowed: the reservation to settle or cancel. */
      reservation?: { id: string; expiresAt: number };
    }
  /** `settle`, `cancel`: what the reservation was charged in the end. */
  | { settled: true; reserved: number; charged: number; refunded: number }
  /** `refund`, `reset`: done. */
  | { ok: true }
  /** `release`: whether the lease was still held. */
  | { released: boolean }
  | { error: { code: string; message: string } };

/** A result that carries a decision. */
export type DecisionResult = Extract<CheckResult, { allowed: boolean }>;

/** A coded error as a result (an unexpected error stays `internal error`: its text is not the caller's business). */
export function errorResult(error: unknown): CheckResult {
  if (isSluiceError(error)) return { error: { code: error.code, message: error.message } };
  return { error: { code: 'ERR_SLUICE_INTERNAL', message: 'internal error' } };
}

/** The decision for a key on the deny list. */
export function deniedDecision(limit: number): Decision {
  return { allowed: false, limit, remaining: 0, resetMs: 0, retryAfterMs: Number.POSITIVE_INFINITY, reason: 'denied' };
}

/** A decision as its JSON result (an infinite wait is `null`). */
export function resultOf(d: Decision): DecisionResult {
  const result: DecisionResult = {
    allowed: d.allowed,
    limit: d.limit,
    remaining: d.remaining,
    resetMs: d.resetMs,
    retryAfterMs: Number.isFinite(d.retryAfterMs) ? d.retryAfterMs : null,
  };
  if (d.delayMs !== undefined) result.delayMs = d.delayMs;
  if (d.reason !== undefined) result.reason = d.reason;
  if (d.degraded !== undefined) result.degraded = d.degraded;
  return result;
}
