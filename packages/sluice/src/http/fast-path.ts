/**
 * The hot path of the plain configuration — one fixed limit keyed by client IP, on a synchronous store, nothing
 * computed per request — which skips every step that would do nothing and asks the store directly.
 */
import type { LimiterDecision } from '../limiter/create-limiter.js';
import { decisionChannel } from '../limiter/decision-channel.js';
import type { ResolvedLimit } from '../limiter/options.js';
import type { DecisionStep } from './decision-step.js';
import type { MiddlewareSettings } from './middleware-settings.js';
import type { HttpOutcome } from './outcome.js';
import type { Awaitable } from './request.js';

/**
 * The `decide` of the plain configuration, or undefined when some option needs the general path.
 * No promise and no failure wrapper (a synchronous store cannot be unavailable): this is the path that
 * must cost next to nothing next to the framework itself.
 */
export function plainDecide<Req>(
  s: MiddlewareSettings<Req>,
  finish: DecisionStep<Req>,
  general: (req: Req) => Awaitable<HttpOutcome>,
): ((req: Req) => Awaitable<HttpOutcome>) | undefined {
  const { options, plan, store, identity, blocks, fixedCost } = s;
  const fixed = plan.fixed;
  const plain =
    s.rulesCheck === undefined &&
    fixed !== undefined &&
    fixed.single &&
    !s.needsInfo &&
    store.synchronous &&
    options.allow === undefined &&
    options.deny === undefined &&
    s.counting === undefined &&
    s.inflight === undefined &&
    !s.shape;
  if (!plain) return undefined;
  const policy = (fixed.limiter.limits[0] as ResolvedLimit).policy;
  const clock = fixed.limiter.clock;
  const costUnits = fixedCost?.cost ?? 1;
  return (req) => {
    // A key blocked by block() is looked up on the general path; until then, none is. While `sluice:decision` has
    // subscribers (OpenTelemetry's), the general path's limiter publishes each decision: asking the store here would not.
    if (blocks.size > 0 || decisionChannel.hasSubscribers) return general(req);
    const ip = identity.clientIp(req);
    const key = ip === '' ? 'unknown' : identity.ipKey(ip);
    const decision = store.check(key, policy, costUnits, clock.now(), true) as LimiterDecision;
    return finish(req, ip, fixed, key, fixedCost, decision);
  };
}
