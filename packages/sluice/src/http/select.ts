/**
 * Which of several limits a request's headers describe (the one closest to exhaustion, as `combineDecisions` picks it),
 * and how long shaping holds a request.
 */
import type { Decision } from '../core/decision.js';
import { combineDecisions } from '../limiter/combine.js';
import type { LimiterDecision } from '../limiter/create-limiter.js';
import type { LimitSet, SetLimit } from './limits.js';

/** The limit the headers describe, and its decision. */
export interface Binding<Req> {
  readonly limit: SetLimit<Req>;
  readonly decision: Decision;
}

/**
 * With several limits, the headers describe the one closest to exhaustion: the rejecting
 * limit that holds the request longest, else the allowance with the fewest remaining — exactly the
 * limit `combineDecisions` picks. A store failure on any limit marks the answer degraded.
 */
export function bindingLimit<Req>(set: LimitSet<Req>, decision: LimiterDecision): Binding<Req> {
  const results = decision.results;
  if (set.single || results === undefined || results.length === 0) {
    return { limit: set.limits[0] as SetLimit<Req>, decision };
  }
  let index = 0;
  if (results.length > 1) {
    const decisions = results.map((r) => r.decision);
    index = decisions.indexOf(combineDecisions(decisions));
  }
  const result = results[index] ?? results[0];
  const name = result?.name;
  const limit = set.limits.find((l) => l.name === name) ?? (set.limits[0] as SetLimit<Req>);
  let chosen: Decision = result?.decision ?? decision;
  if (chosen.degraded !== true && results.some((r) => r.decision.degraded === true)) {
    chosen = { ...chosen, degraded: true };
  }
  return { limit, decision: chosen };
}

/** How long shaping holds the request: the longest `delayMs` of any limit (only the leaky bucket sets one). */
export function largestDelay(decision: LimiterDecision): number {
  let delay = decision.delayMs ?? 0;
  if (decision.results !== undefined) {
    for (const r of decision.results) delay = Math.max(delay, r.decision.delayMs ?? 0);
  }
  return delay;
}
