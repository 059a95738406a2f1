/**
 * The concurrency limit's step, after the rate limits passed: a place is taken (and given back when the response is
 * done), or the request is rejected and what the rate limits took is given back.
 */
import type { CheckOptions, LimiterDecision, LimiterKey } from '../limiter/create-limiter.js';
import type { TakePlace } from './concurrency.js';
import type { LimitSet } from './limits.js';
import type { MiddlewareSettings } from './middleware-settings.js';
import type { HttpOutcome } from './outcome.js';
import { type AppliedLimitInfo, appendInfo } from './rate-limit-info.js';
import type { Responder } from './responder.js';

/** Takes a concurrency place for a request the rate limits passed. */
export type PlaceStep<Req> = (
  req: Req,
  ip: string,
  set: LimitSet<Req>,
  key: LimiterKey,
  cost: CheckOptions | undefined,
  decision: LimiterDecision,
  own: AppliedLimitInfo[],
) => Promise<HttpOutcome>;

/** Creates the concurrency step of a middleware whose `concurrency` option compiled to `take`. */
export function createPlaceStep<Req>(
  s: MiddlewareSettings<Req>,
  respond: Responder<Req>,
  take: TakePlace,
): PlaceStep<Req> {
  const { counting, onLimited, previousOf } = s;
  return async (req, ip, set, key, cost, decision, own) => {
    // The place is per key: the limiter's key, or with several limits their first string key.
    const placeKey = typeof key === 'string' ? key : (Object.values(key).find((k) => typeof k === 'string') ?? ip);
    const taken = await take(placeKey);
    if (!taken.ok) {
      await set.limiter.refund(key, cost);
      const info = appendInfo(previousOf(req), [...own, taken.applied]);
      onLimited?.({ req, ip, decision: taken.applied.decision, limitName: taken.applied.name, shadow: false });
      return respond.reject('limited', taken.applied.decision, taken.applied.name, info, req);
    }
    const info = appendInfo(previousOf(req), [...own, taken.inflight.applied], set.limiter, key, cost, own);
    const counting0 = counting?.(req, set.limiter, key, cost?.cost ?? 1);
    const counted = counting0 === undefined ? undefined : respond.settled(req, info, counting0);
    const release = taken.inflight.release;
    return respond.passed(decision, info, async (status) => {
      await release();
      await counted?.(status);
    });
  };
}
