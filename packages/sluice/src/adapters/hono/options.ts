/**
 * The options of `sluice/hono`, shared by its full and edge builds, and `c.get('rateLimit')`'s type on Hono's context.
 */
import type { Context } from 'hono';
import type { RateLimitOptions } from '../../http/options.js';
import type { RateLimitInfo } from '../../http/rate-limit-info.js';
import type { RejectionInfo } from '../../http/rejection.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** What sluice decided: `c.get('rateLimit')`. */
    rateLimit?: RateLimitInfo;
  }
}

/** Options of the Hono middleware: the common options plus a native rejection handler. */
export interface HonoRateLimitOptions extends RateLimitOptions<Context> {
  /** Answers a rejection yourself (the rate-limit headers and `Retry-After` are already set). */
  handler?: (c: Context, rejection: RejectionInfo) => Response | Promise<Response>;
}
