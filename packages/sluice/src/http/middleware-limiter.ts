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
import type { Awaitable, RequestAccess } from './request.js';
import { createTokenBudget, type TokenBudget } from './token-budget.js';

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
      'this middleware has only the adaptive or tokenBudget option: there is no rate limit to reset, penalise or block; add limit and period',
    );
  };
  return {
    decide: () => PASS,
    store: createMemoryStore(),
    watchesClient: false,
    resetKey: none,
    penalty: none,
    block: none,
  };
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
  const headers = [...outcome.headers, 'retry-after', String(retryAfterSeconds)];
  return { ...outcome, pass: false, status: 503, headers, body, contentType, rejection };
}

const then = <T, U>(v: Awaitable<T>, f: (t: T) => Awaitable<U>): Awaitable<U> =>
  v instanceof Promise ? v.then(f) : f(v);

/** The middleware under the `adaptive` or `tokenBudget` option: its rate limits, or none when it has none. */
function innerLimiter<Req>(
  rest: RateLimitOptions<Req>,
  access: RequestAccess<Req>,
  extraKeys: ReadonlySet<string>,
  claim: boolean,
): HttpLimiter<Req> & { readonly adaptive?: AdaptiveGate<Req> } {
  const limited =
    rest.limit !== undefined || rest.limits !== undefined || rest.rules !== undefined || rest.adaptive !== undefined;
  return limited ? createMiddlewareLimiter(rest, access, extraKeys, claim) : noRateLimit(rest, access, extraKeys);
}

/**
 * Creates the limiter behind an adapter's `rateLimit()`: `createHttpLimiter`, plus the `adaptive`
 * and `tokenBudget` options when given (then a rate limit is optional). `budgetInDecide: false` leaves
 * the budget out of `decide` for an adapter that reserves later, once the body is parsed (Fastify).
 */
export function createMiddlewareLimiter<Req>(
  options: RateLimitOptions<Req>,
  access: RequestAccess<Req>,
  extraKeys: ReadonlySet<string> = new Set(),
  claim = true,
  budgetInDecide = true,
): HttpLimiter<Req> & { readonly adaptive?: AdaptiveGate<Req>; readonly tokenBudget?: TokenBudget<Req> } {
  if (options?.tokenBudget !== undefined) {
    const { tokenBudget, ...rest } = options;
    const budget = createTokenBudget(tokenBudget, rest, access);
    const inner = innerLimiter(rest, access, extraKeys, claim);
    if (!budgetInDecide) return { ...inner, tokenBudget: budget };
    return { ...inner, tokenBudget: budget, decide: (req) => then(inner.decide(req), (o) => budget.admit(req, o)) };
  }
  if (options?.adaptive === undefined) return createHttpLimiter(options, access, extraKeys, claim);
  const { adaptive, ...rest } = options;
  const gate = createAdaptiveGate(adaptive);
  const inner = innerLimiter(rest, access, extraKeys, claim);
  const render = createRenderer(rest, (req: Req) => access.header(req, 'accept'));

  const settle = (outcome: HttpOutcome, req: Req, admission: AdaptiveAdmission): HttpOutcome =>
    admission.shed
      ? shedOutcome(outcome, admission.retryAfterSeconds, render, req)
      : gate.hold(outcome, admission.permit);
  const admit = (outcome: HttpOutcome, req: Req) =>
    outcome.pass ? then(gate.admit(req), (a) => settle(outcome, req, a)) : outcome;
  return {
    ...inner,
    adaptive: gate,
    watchesClient: true,
    decide: (req) => then(inner.decide(req), (o) => admit(o, req)),
  };
}
