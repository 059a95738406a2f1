import type { Decision } from '../core/decision.js';

/**
 * One decision for a request checked against several limits: a rejection if any limit rejected
 * (the one that will hold the request up longest), else the allowance closest to exhaustion (fewest
 * remaining; on a tie, the later reset). This is what headers report.
 */
export function combineDecisions(decisions: readonly Decision[]): Decision {
  let chosen: Decision | undefined;
  for (const d of decisions) {
    if (chosen === undefined || binds(d, chosen)) chosen = d;
  }
  return (
    chosen ?? {
      allowed: true,
      limit: Number.POSITIVE_INFINITY,
      remaining: Number.POSITIVE_INFINITY,
      resetMs: 0,
      retryAfterMs: 0,
    }
  );
}

/** True when `a` says more about the request's fate than `b`. */
function binds(a: Decision, b: Decision): boolean {
  if (a.allowed !== b.allowed) return !a.allowed;
  if (!a.allowed) return a.retryAfterMs > b.retryAfterMs;
  if (a.remaining !== b.remaining) return a.remaining < b.remaining;
  return a.resetMs > b.resetMs;
}
