/**
 * Shape mode (`mode: 'shape'`): a request the leaky bucket admitted later is held for its delay and then passed; one
 * that would wait longer than `maxDelayMs` gives its place back and is turned away.
 */
import { type CheckOptions, keyFor, type LimiterDecision, type LimiterKey } from '../limiter/create-limiter.js';
import type { LimitSet } from './limits.js';
import type { MiddlewareSettings } from './middleware-settings.js';
import type { HttpOutcome } from './outcome.js';
import { appendInfo, appliedLimit } from './rate-limit-info.js';
import type { Awaitable } from './request.js';
import type { Responder } from './responder.js';
import { bindingLimit, largestDelay } from './select.js';

/** Holds a passed request for its delay, or turns it away when the queue is longer than the caller waits. */
export type Shaping<Req> = (
  req: Req,
  ip: string,
  set: LimitSet<Req>,
  key: LimiterKey,
  cost: CheckOptions | undefined,
  decision: LimiterDecision,
  outcome: HttpOutcome,
) => Awaitable<HttpOutcome>;

/** Creates the shaping step of a middleware with settings `s`. */
export function createShaping<Req>(s: MiddlewareSettings<Req>, respond: Responder<Req>): Shaping<Req> {
  const { maxDelayMs, sleep, onLimited, previousOf } = s;
  return (req, ip, set, key, cost, decision, outcome) => {
    const delayMs = largestDelay(decision);
    if (delayMs <= maxDelayMs) return delayMs > 0 ? sleep(delayMs).then(() => outcome) : outcome;
    // The queue is longer than the caller will wait: give the place back and turn the request away.
    // Any request now would queue at least as long, so none remains; once the place is back, the
    // queue empties when the requests ahead have drained, i.e. after this request's delay.
    const { limit, decision: bound } = bindingLimit(set, decision);
    const over: LimiterDecision = {
      ...bound,
      allowed: false,
      remaining: 0,
      resetMs: delayMs,
      retryAfterMs: delayMs - maxDelayMs,
    };
    onLimited?.({ req, ip, decision: over, limitName: limit.name, shadow: false });
    const overInfo = appendInfo(previousOf(req), [appliedLimit(limit, over, keyFor(key, limit.name))]);
    return set.limiter.refund(key, cost).then(() => respond.reject('limited', over, limit.name, overInfo, req));
  };
}
