/**
 * The middleware's `adaptive` option, framework-neutral: after the rate limits pass, a request takes
 * a place in an adaptive limiter (by its priority) or is shed with 503 and `Retry-After`; its place is
 * given back when the response is done, measured from the request to the response's finish.
 */
import type { AdaptiveLimiter } from '../adaptive/create-adaptive-limiter.js';
import { createAdaptiveLimiter } from '../adaptive/create-adaptive-limiter.js';
import type { AdaptiveDecision, AdaptivePermit } from '../adaptive/decision.js';
import { optionError } from '../core/errors.js';
import type { AdaptiveMiddlewareOptions } from './adaptive-options.js';
import type { HttpOutcome } from './outcome.js';
import type { Awaitable } from './request.js';
import { warnOnce } from './warn.js';

/** What the gate answers for a request that passed the rate limits. */
export type AdaptiveAdmission =
  | { readonly shed: false; readonly permit: AdaptivePermit }
  | { readonly shed: true; readonly retryAfterSeconds: number };

/** A compiled `adaptive` option. */
export interface AdaptiveGate<Req> {
  readonly limiter: AdaptiveLimiter;
  /** Takes a place for `req` (waits in the limiter's queue if it has one). */
  admit(req: Req): Awaitable<AdaptiveAdmission>;
  /** Wraps a passing outcome so its `afterResponse` gives the place back. */
  hold(outcome: HttpOutcome, permit: AdaptivePermit): HttpOutcome;
}

/** 5xx and a response that never went out (0: the client left, a timeout) are overload's marks. */
export const outcomeOf = (status: number) => (status === 0 || status >= 500 ? 'dropped' : 'success');

function resolveLimiter<Req>(options: AdaptiveMiddlewareOptions<Req>): AdaptiveLimiter {
  const { limiter, priority: _priority, ...own } = options;
  if (limiter === undefined) return createAdaptiveLimiter(own);
  const [mixed] = Object.keys(own);
  if (mixed !== undefined)
    throw optionError(`adaptive.${mixed}`, "give either adaptive.limiter or the limiter's options, not both");
  return limiter;
}

/** Compiles the `adaptive` option (validated here, once). */
export function createAdaptiveGate<Req>(options: AdaptiveMiddlewareOptions<Req>): AdaptiveGate<Req> {
  if (options === null || typeof options !== 'object')
    throw optionError('adaptive', "give options, e.g. { algorithm: 'gradient2' }");
  const { priority } = options;
  if (priority !== undefined && typeof priority !== 'function')
    throw optionError('adaptive.priority', 'expected a function (req) => name');
  const limiter = resolveLimiter(options);
  const known = new Set(limiter.priorities);
  const lowest = limiter.priorities[limiter.priorities.length - 1] as string;
  const priorityOf = (req: Req): string => {
    if (priority === undefined) return lowest;
    const name = priority(req);
    if (known.has(name)) return name;
    // A name from a header or a typo must not turn requests into errors: they are shed first instead.
    warnOnce(
      'SLUICE_ADAPTIVE_UNKNOWN_PRIORITY',
      `sluice: adaptive.priority returned '${String(name)}', not one of ${limiter.priorities.join(', ')}; counted as '${lowest}'`,
    );
    return lowest;
  };
  const admission = (d: AdaptiveDecision): AdaptiveAdmission =>
    d.allowed
      ? { shed: false, permit: d }
      : { shed: true, retryAfterSeconds: Math.max(1, Math.ceil(d.retryAfterMs / 1000)) };
  // Without a queue a request is answered at once: no promise, the middleware's fast path stays sync.
  const queued = limiter.queueSize > 0;
  return {
    limiter,
    admit(req) {
      const p = priorityOf(req);
      return queued ? limiter.acquire({ priority: p }).then(admission) : admission(limiter.tryAcquire({ priority: p }));
    },
    hold(outcome, permit) {
      const after = outcome.afterResponse;
      return {
        ...outcome,
        afterResponse: async (status) => {
          permit.release(outcomeOf(status));
          await after?.(status);
        },
      };
    },
  };
}

/**
 * The `adaptive` option with its limiter made once, so that several middlewares built from the same
 * options (Nest's per-handler limiters) share one limit rather than each having its own.
 */
export function shareAdaptive<Req>(adaptive: AdaptiveMiddlewareOptions<Req>): AdaptiveMiddlewareOptions<Req> {
  // Not an object: left for createAdaptiveGate to refuse with its message.
  if (adaptive === null || typeof adaptive !== 'object') return adaptive;
  const limiter = resolveLimiter(adaptive);
  return adaptive.priority === undefined ? { limiter } : { limiter, priority: adaptive.priority };
}
