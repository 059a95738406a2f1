/** The type of the middleware's `adaptive` option (its own file: the options type and the gate both need it). */
import type { AdaptiveLimiter } from '../adaptive/create-adaptive-limiter.js';
import type { AdaptiveLimiterOptions } from '../adaptive/options.js';

/** The middleware's `adaptive` option: the limiter's options (or a limiter) and each request's priority. */
export interface AdaptiveMiddlewareOptions<Req> extends AdaptiveLimiterOptions {
  /**
   * A limiter to use instead of creating one (to share it between middlewares, or read its `inFlight`
   * and `stats()`); the limiter options are then its own, not given here.
   */
  limiter?: AdaptiveLimiter;
  /** The priority of a request, one of `priorities`; unknown names count as the least important. @default the least important */
  priority?: (req: Req) => string;
}
