/**
 * The options of sluice's Fastify plugin and of a route's `config.rateLimit`, and what sluice adds to Fastify's
 * types (`request.rateLimit`, `config.rateLimit`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimitInfo, RateLimitOptions, RejectionInfo } from '../../http/index.js';

/** Options of the Fastify plugin: the common options plus a native rejection handler. */
export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest> {
  /** Answers a rejection yourself (the rate-limit headers and `Retry-After` are already set). */
  handler?: (request: FastifyRequest, reply: FastifyReply, rejection: RejectionInfo) => void;
  /**
   * `false`: limit only the routes that ask for it with `config.rateLimit` (an object: `{}` for the
   * plugin's limit, or a limit of the route's own, which then stands alone), as @fastify/rate-limit's
   * `global: false`; every other route, 404s included, is not limited.
   * @default true
   */
  global?: boolean;
}

/**
 * A route's own settings, under `config.rateLimit`: `false` turns limiting off for the route; an
 * object overrides the plugin's options. With a limit of its own (`limit`/`limits`) the route counts
 * it separately (named `"<METHOD> <url>"` unless `name` is given) **in addition to** the plugin's
 * limit, unless `replaceGlobal: true`; without one it shares the plugin's counters, e.g. `{ cost: 5 }`.
 */
export type FastifyRouteRateLimit = (Partial<FastifyRateLimitOptions> & { replaceGlobal?: boolean }) | false;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** sluice's per-route settings (see `FastifyRouteRateLimit`). */
    rateLimit?: FastifyRouteRateLimit;
  }
  interface FastifyRequest {
    /** What sluice decided (every limit applied so far, the one closest to exhaustion first). */
    rateLimit?: RateLimitInfo | null;
  }
}
