/**
 * The middleware's `adaptive` option, framework-neutral: after the rate limits pass, a request takes
 * a place in an adaptive limiter (by its priority) or is shed with 503 and `Retry-After`; its place is
 * given back when the handler has ended the response (not when a slow client has read it all), measured
 * from the request to then. A client that hangs up while queued leaves the queue at once, unmeasured.
 */
import type { AdaptiveLimiter } from '../adaptive/create-adaptive-limiter.js';
import { createAdaptiveLimiter } from '../adaptive/create-adaptive-limiter.js';
import type { AdaptiveDecision, AdaptivePermit } from '../adaptive/decision.js';
import { optionError } from '../core/errors.js';
import type { AdaptiveMiddlewareOptions } from './adaptive-options.js';
import { clientLeft, type GateResponse, type Watched, watchedOf } from './client-watch.js';
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

/** `permit`, given back as soon as the handler has ended the response; the later release is then a no-op. */
function releasedAtEnd(permit: AdaptivePermit, res: GateResponse): AdaptivePermit {
  let released = false;
  const release: AdaptivePermit['release'] = (outcome) => {
    if (released) return;
    released = true;
    permit.release(outcome);
  };
  // 'finish' waits until the socket has taken every byte: a client that reads slowly, or never, would keep
  // the place for as long as it likes. 'prefinish' is when the whole response is handed to Node.
  res.once('prefinish', () => release(outcomeOf(res.statusCode)));
  return { ...permit, release };
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
  const admission = (d: AdaptiveDecision, seen: Watched | undefined): AdaptiveAdmission => {
    if (!d.allowed) return { shed: true, retryAfterSeconds: Math.max(1, Math.ceil(d.retryAfterMs / 1000)) };
    return { shed: false, permit: seen === undefined || typeof seen === 'function' ? d : releasedAtEnd(d, seen) };
  };
  // Without a queue a request is answered at once: no promise, the middleware's fast path stays sync.
  const queued = limiter.queueSize > 0;
  return {
    limiter,
    admit(req) {
      const priority = priorityOf(req);
      const seen = watchedOf(req);
      if (!queued) return admission(limiter.tryAcquire({ priority }), seen);
      // A client gone while queued is refused ('aborted'): its handler never runs, nothing is measured.
      const signal = seen === undefined ? undefined : clientLeft(seen);
      const options = signal === undefined ? { priority } : { priority, signal };
      return limiter.acquire(options).then((d) => admission(d, seen));
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
