/**
 * `sluice/koa` — rate limiting for Koa.
 * @packageDocumentation
 */
import type { Context, Middleware, Next } from 'koa';
import { asError } from '../core/errors.js';
import { watchResponse } from '../http/client-watch.js';
import { afterNodeResponse } from '../http/count-by-response.js';
import {
  createMiddlewareLimiter,
  type HttpOutcome,
  nodeHeader,
  type RateLimitControls,
  type RateLimitInfo,
  type RateLimitOptions,
  type RejectionInfo,
  type RequestAccess,
} from '../http/index.js';
import { meterNodeResponse } from '../http/meter-response.js';

/** Options of the Koa middleware: the common options plus a native rejection handler. */
export interface KoaRateLimitOptions extends RateLimitOptions<Context> {
  /** Answers a rejection yourself (the rate-limit headers and `Retry-After` are already set). */
  handler?: (ctx: Context, next: Next, rejection: RejectionInfo) => unknown;
}

const access: RequestAccess<Context> = {
  name: 'Koa',
  peer: (ctx) => ctx.req.socket.remoteAddress,
  header: (ctx, name) => nodeHeader(ctx.req.headers, name),
  method: (ctx) => ctx.method,
  url: (ctx) => ctx.originalUrl,
  headers: (ctx) => ctx.req.headers,
  rateLimitOf: (ctx) => (ctx.state as { rateLimit?: unknown }).rateLimit,
  // A body parser (@koa/bodyparser) before this middleware, for the tokenBudget option.
  body: (ctx) => (ctx.request as { body?: unknown }).body,
  // Koa's own `app.proxy`, unless sluice's `trustProxy` is given. Koa then believes the proxy header
  // of every peer and takes its left-most entry (the client's own claim), unless `app.maxIpsCount`
  // keeps only the entries our proxies wrote: without it, the setting is permissive (warned about).
  framework: {
    setting: 'app.proxy = true',
    example: 'app.maxIpsCount = 1 for one proxy in front',
    clientIp: (ctx) => (ctx.app.proxy ? ctx.ip : undefined),
    permissive: (ctx) => ctx.app.proxy && !(ctx.app.maxIpsCount > 0),
  },
};

const EXTRA_KEYS: ReadonlySet<string> = new Set(['handler']);

/**
 * Creates Koa middleware that limits requests and sets rate-limit headers.
 *
 * @example
 * import Koa from 'koa';
 * import { rateLimit } from 'sluice/koa';
 * const app = new Koa();
 * app.use(rateLimit({ limit: 100, period: '1m' }));
 */
export function rateLimit(options: KoaRateLimitOptions): Middleware & RateLimitControls {
  const limiter = createMiddlewareLimiter(options, access, EXTRA_KEYS);
  const handler = options.handler;
  const metered = limiter.tokenBudget !== undefined;

  function apply(outcome: HttpOutcome, ctx: Context, next: Next): unknown {
    if (outcome.info !== undefined) (ctx.state as { rateLimit?: RateLimitInfo }).rateLimit = outcome.info;
    if (outcome.afterResponse !== undefined) afterNodeResponse(ctx.res, outcome.afterResponse);
    if (metered && outcome.pass && outcome.meter !== undefined) meterNodeResponse(ctx.res, outcome.meter);
    const headers = outcome.headers;
    for (let i = 0; i < headers.length; i += 2) {
      ctx.set(headers[i] as string, headers[i + 1] as string);
    }
    if (outcome.pass) return next();
    if (handler !== undefined && outcome.rejection !== undefined) return handler(ctx, next, outcome.rejection);
    ctx.status = outcome.status;
    ctx.body = outcome.body;
    // After the body: Koa picks a type for a string body unless one is set, and ours is exact.
    ctx.set('Content-Type', outcome.contentType);
    return undefined;
  }

  const watching = limiter.watchesClient;
  const sluiceRateLimit: Middleware = (ctx, next) => {
    if (watching) watchResponse(ctx, ctx.res);
    let outcome: ReturnType<typeof limiter.decide>;
    try {
      outcome = limiter.decide(ctx);
    } catch (error) {
      throw asError(error);
    }
    if (!(outcome instanceof Promise)) return apply(outcome, ctx, next);
    return outcome.then(
      (o) => apply(o, ctx, next),
      (e) => {
        throw asError(e);
      },
    );
  };
  return Object.assign(sluiceRateLimit, { resetKey: limiter.resetKey, penalty: limiter.penalty, block: limiter.block });
}

export type { RateLimitControls, RateLimitInfo, RateLimitOptions, RejectionInfo };
