/**
 * From the store's decision to the middleware's outcome: a refusal, or the pass with its headers — then, when set,
 * the concurrency place and shaping's delay. Every request that reaches the store ends here (the hot path).
 */
import type { CheckOptions, LimiterDecision, LimiterKey } from '../limiter/create-limiter.js';
import { createPlaceStep } from './concurrency-step.js';
import type { LimitSet, SetLimit } from './limits.js';
import type { MiddlewareSettings } from './middleware-settings.js';
import { type HttpOutcome, PASS } from './outcome.js';
import { appendInfo, appliedOf } from './rate-limit-info.js';
import type { Awaitable } from './request.js';
import type { Responder } from './responder.js';
import { bindingLimit } from './select.js';
import { createShaping } from './shaping.js';

/** Turns the store's decision on a request into the outcome. */
export type DecisionStep<Req> = (
  req: Req,
  ip: string,
  set: LimitSet<Req>,
  key: LimiterKey,
  cost: CheckOptions | undefined,
  decision: LimiterDecision,
) => Awaitable<HttpOutcome>;

/** Creates the decision step of a middleware with settings `s`. */
export function createDecisionStep<Req>(s: MiddlewareSettings<Req>, respond: Responder<Req>): DecisionStep<Req> {
  const { shadow, counting, previousOf } = s;
  const place = s.inflight === undefined ? undefined : createPlaceStep(s, respond, s.inflight);
  const shaping = s.shape ? createShaping(s, respond) : undefined;
  return (req, ip, set, key, cost, decision) => {
    const own = appliedOf(set, key, decision);
    if (!decision.allowed) {
      const name = set.single ? (set.limits[0] as SetLimit<Req>).name : bindingLimit(set, decision).limit.name;
      return respond.refused(req, ip, decision, name, own);
    }
    if (shadow) return PASS;
    if (place !== undefined) return place(req, ip, set, key, cost, decision, own);
    // What this middleware took, on the info: a later middleware that rejects the request gives it back.
    const info = appendInfo(previousOf(req), own, set.limiter, key, cost);
    const after =
      counting === undefined ? undefined : respond.settled(req, info, counting(req, set.limiter, key, cost?.cost ?? 1));
    const outcome = respond.passed(decision, info, after);
    return shaping === undefined ? outcome : shaping(req, ip, set, key, cost, decision, outcome);
  };
}
