/** Why a check was rejected, when it is not simply "over the limit". */
export type RejectReason = 'cost-exceeds-capacity' | 'blocked' | 'denied' | 'store-unavailable';

/**
 * The answer to one check. All times are integer milliseconds, relative to the moment of the check.
 */
export interface Decision {
  /** Whether the request may pass. */
  allowed: boolean;
  /** The policy's limit (requests per period). */
  limit: number;
  /** How many more unit-cost requests would pass right now. Never negative. */
  remaining: number;
  /** Time until the policy is back to full capacity; 0 when it already is. */
  resetMs: number;
  /** Time until this same request would pass: 0 when allowed, `Infinity` when it never can. */
  retryAfterMs: number;
  /** Leaky bucket only: how long to hold the request before its turn in the queue (for shaping). */
  delayMs?: number;
  /** Why a rejection happened, when it is not simply "over the limit". */
  reason?: RejectReason;
  /** True when the decision was taken without the store (a failure policy answered). */
  degraded?: boolean;
}

/**
 * The rejection of a request of `cost` over the limit (`retryAfterMs`: when it would fit), or the one
 * for a cost that can never fit the policy's capacity. The algorithms' rejections share it, off their
 * hot paths.
 */
export function rejection(
  limit: number,
  capacity: number,
  cost: number,
  remaining: number,
  resetMs: number,
  retryAfterMs: number,
): Decision {
  if (cost > capacity) return costExceedsCapacity(limit, remaining, resetMs);
  return { allowed: false, limit, remaining, resetMs, retryAfterMs };
}

/** The rejection for a cost that can never fit the policy's capacity. */
export function costExceedsCapacity(limit: number, remaining: number, resetMs: number): Decision {
  return {
    allowed: false,
    limit,
    remaining,
    resetMs,
    retryAfterMs: Number.POSITIVE_INFINITY,
    reason: 'cost-exceeds-capacity',
  };
}
