/** The decision refusing a lease when `limit` are held (or the limit is 0): when a place frees, and why. */
import type { LeaseDecision } from './store.js';

/** A refused lease: `latestMs` until every held lease lapses, `soonestMs` until the first does. */
export function leaseRefusal(limit: number, latestMs: number, soonestMs: number): LeaseDecision {
  return {
    allowed: false,
    limit,
    remaining: 0,
    resetMs: latestMs,
    // A place frees up when the soonest lease lapses, if it is not released before.
    retryAfterMs: limit === 0 ? Number.POSITIVE_INFINITY : soonestMs,
    ...(limit === 0 ? { reason: 'cost-exceeds-capacity' as const } : {}),
  };
}
