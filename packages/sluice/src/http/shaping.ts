/**
 * Shape mode (`mode: 'shape'`): a request the leaky bucket admitted later is held for its delay and then passed; one
 * that would wait longer than `maxDelayMs` gives its place back and is turned away, and so does one whose client
 * leaves while it waits.
 */
import { type CheckOptions, keyFor, type LimiterDecision, type LimiterKey } from '../limiter/create-limiter.js';
import { clientLeft, watchedOf } from './client-watch.js';
import type { HeaderList } from './headers.js';
import type { LimitSet } from './limits.js';
import type { MiddlewareSettings } from './middleware-settings.js';
import type { HttpOutcome } from './outcome.js';
import { appendInfo, appliedLimit } from './rate-limit-info.js';
import type { Awaitable } from './request.js';
import type { Responder } from './responder.js';
import { bindingLimit, largestDelay } from './select.js';

/**
 * What a request whose client left while it was held becomes: no handler, nothing counted by its response, and 499
 * (nginx's "client closed request") on a response nobody reads, for the logs.
 */
const CLIENT_GONE: HttpOutcome = Object.freeze({
  pass: false,
  headers: Object.freeze([]) as HeaderList,
  status: 499,
  body: '',
  contentType: 'text/plain',
  rejection: undefined,
  decision: undefined,
  info: undefined,
  afterResponse: undefined,
});

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
  /**
   * Holds a passed request for `delayMs`. A client that leaves meanwhile gives its place in the queue back at once
   * (the requests behind it wait less), and its handler never runs.
   */
  const hold = (
    req: Req,
    set: LimitSet<Req>,
    key: LimiterKey,
    cost: CheckOptions | undefined,
    delayMs: number,
    outcome: HttpOutcome,
  ) => {
    const seen = watchedOf(req);
    if (seen === undefined) return sleep(delayMs).then(() => outcome);
    const left = clientLeft(seen);
    const gone = new Promise<void>((resolve) => left.addEventListener('abort', () => resolve(), { once: true }));
    return Promise.race([sleep(delayMs), gone]).then(() =>
      left.aborted ? set.limiter.refund(key, cost).then(() => CLIENT_GONE) : outcome,
    );
  };
  return (req, ip, set, key, cost, decision, outcome) => {
    const delayMs = largestDelay(decision);
    if (delayMs <= maxDelayMs) return delayMs > 0 ? hold(req, set, key, cost, delayMs, outcome) : outcome;
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
