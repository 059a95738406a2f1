/**
 * `createMiddlewareLimiter`: what every adapter runs per request — the rate limits of
 * `createHttpLimiter` and, when the `adaptive` option is set, overload control after them (a place by
 * priority, or 503). Without `adaptive` it is `createHttpLimiter` itself, unchanged.
 */
import { SluiceError } from '../core/errors.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import { type AdaptiveAdmission, type AdaptiveGate, createAdaptiveGate } from './adaptive-gate.js';
import { checkOptions } from './check-options.js';
import { createHttpLimiter, type HttpLimiter } from './http-limiter.js';
import type { RateLimitOptions } from './options.js';
import { type HttpOutcome, PASS } from './outcome.js';
import { createRenderer, rejectionInfo } from './rejection.js';
import type { RequestAccess } from './request.js';

/** A limiter for middleware that only sheds (no rate limit given): every request passes the rate-limit step. */
function noRateLimit<Req>(
  options: RateLimitOptions<Req>,
  access: RequestAccess<Req>,
  extraKeys: ReadonlySet<string>,
): HttpLimiter<Req> {
  checkOptions(options, extraKeys, access.name);
  const none = async () => {
    throw new SluiceError(
      'ERR_SLUICE_NO_RATE_LIMIT',
      'this middleware has only the adaptive option: there is no rate limit to reset, penalise or block; add limit and period',
    );
  };
  return { decide: () => PASS, store: createMemoryStore(), resetKey: none, penalty: none, block: none };
}

/** The outcome of a request the gate shed: 503, `Retry-After`, the rate limits' headers kept. */
function shedOutcome<Req>(
  outcome: HttpOutcome,
  retryAfterSeconds: number,
  render: ReturnType<typeof createRenderer<Req>>,
  req: Req,
): HttpOutcome {
  const rejection = { ...rejectionInfo('overloaded', undefined, 'adaptive', 503), retryAfter: retryAfterSeconds };
  const { body, contentType } = render(rejection, req);
  return {
    ...outcome,
    pass: false,
    status: 503,
    headers: [...outcome.headers, 'retry-after', String(retryAfterSeconds)],
    body,
    contentType,
    rejection,
    afterResponse: outcome.afterResponse,
  };
}

/**
 * Creates the limiter behind an adapter's `rateLimit()`: `createHttpLimiter`, plus the `adaptive`
 * option when given (then a rate limit is optional).
 */
export function createMiddlewareLimiter<Req>(
  options: RateLimitOptions<Req>,
  access: RequestAccess<Req>,
  extraKeys: ReadonlySet<string> = new Set(),
  claim = true,
): HttpLimiter<Req> & { readonly adaptive?: AdaptiveGate<Req> } {
  if (options?.adaptive === undefined) return createHttpLimiter(options, access, extraKeys, claim);
  const { adaptive, ...rest } = options;
  const gate = createAdaptiveGate(adaptive);
  const limited = rest.limit !== undefined || rest.limits !== undefined || rest.rules !== undefined;
  const inner = limited ? createHttpLimiter(rest, access, extraKeys, claim) : noRateLimit(rest, access, extraKeys);
  const render = createRenderer(rest, (req: Req) => access.header(req, 'accept'));

  const settle = (outcome: HttpOutcome, req: Req, admission: AdaptiveAdmission): HttpOutcome =>
    admission.shed
      ? shedOutcome(outcome, admission.retryAfterSeconds, render, req)
      : gate.hold(outcome, admission.permit);
  const admit = (outcome: HttpOutcome, req: Req) => {
    if (!outcome.pass) return outcome;
    const admission = gate.admit(req);
    return admission instanceof Promise
      ? admission.then((a) => settle(outcome, req, a))
      : settle(outcome, req, admission);
  };
  return {
    ...inner,
    adaptive: gate,
    decide(req) {
      const outcome = inner.decide(req);
      return outcome instanceof Promise ? outcome.then((o) => admit(o, req)) : admit(outcome, req);
    },
  };
}
