/**
 * The framework-neutral middleware behind every adapter: it decides a request (skip, allow and deny lists, keys, limits
 * or rules, shaping, concurrency) into an `HttpOutcome` that the adapter only has to apply. Its parts: the resolved
 * options (middleware-settings), the request path (request-path, rules-path), the plain hot path (fast-path), the
 * step from the store's decision (decision-step) and the outcomes (responder).
 */

import type { Store } from '../stores/store.js';
import { createControls, type RateLimitControls } from './controls.js';
import { createDecisionStep } from './decision-step.js';
import { plainDecide } from './fast-path.js';
import { resolveSettings } from './middleware-settings.js';
import type { RateLimitOptions } from './options.js';
import { type HttpOutcome, PASS } from './outcome.js';
import type { Awaitable, RequestAccess } from './request.js';
import { createRequestPath } from './request-path.js';
import { createResponder } from './responder.js';

/** The framework-neutral middleware: decides requests; adapters apply the outcome. */
export interface HttpLimiter<Req> extends RateLimitControls {
  /**
   * Decides a request. Synchronous (no promise) on a synchronous store (memory) when no option
   * returns a promise and no request is held for shaping — the fast path.
   */
  decide(req: Req): Awaitable<HttpOutcome>;
  /** The store counters live in. */
  readonly store: Store;
  /**
   * True when a request may wait before it passes (shape mode's delay, the adaptive limiter's queue): the adapter
   * then tells the core how to see the client leave (`watchResponse`, `watchClientSignal`) before deciding.
   */
  readonly watchesClient: boolean;
}

/**
 * Creates the framework-neutral rate limiter behind every adapter. Options are validated here, once.
 *
 * @param access - how to read the adapter's request.
 * @param extraKeys - option names the adapter accepts besides the common ones (e.g. `handler`).
 * @param claim - false when the adapter shares counters with another of its own limiters on purpose
 *   (a Fastify route that only changes the cost of the plugin's limit).
 * @example
 * const limiter = createHttpLimiter({ limit: 100, period: '1m' }, nodeRequestAccess);
 * const outcome = await limiter.decide(req);
 * const h = outcome.headers;
 * for (let i = 0; i < h.length; i += 2) res.setHeader(h[i], h[i + 1]);
 */
export function createHttpLimiter<Req>(
  options: RateLimitOptions<Req>,
  access: RequestAccess<Req>,
  extraKeys: ReadonlySet<string> = new Set(),
  claim = true,
): HttpLimiter<Req> {
  const settings = resolveSettings(options, access, extraKeys, claim);
  const respond = createResponder(settings);
  // Every request that reaches the store ends in `finish`; the plain configuration goes straight there.
  const finish = createDecisionStep(settings, respond);
  const general = createRequestPath(settings, respond, finish);
  const decide = plainDecide(settings, finish, general) ?? general;
  const { plan, rulesCheck, blocks, clock, store, shape } = settings;
  return { ...createControls(plan, rulesCheck !== undefined, blocks, clock), decide, store, watchesClient: shape };
}

export type { HttpOutcome };
export { PASS };
