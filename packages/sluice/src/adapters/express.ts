/**
 * `sluice/express` — rate limiting for Express 4 and 5.
 * @packageDocumentation
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
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

declare global {
  // Express's own way to type what middleware adds to the request.
  namespace Express {
    interface Request {
      /** What sluice decided (every limit applied so far, the one closest to exhaustion first). */
      rateLimit?: RateLimitInfo;
    }
  }
}

/** Options of the Express middleware: the common options plus a native rejection handler. */
export interface ExpressRateLimitOptions extends RateLimitOptions<Request> {
  /**
   * Answers a rejection yourself (the rate-limit headers and `Retry-After` are already set).
   * @default a JSON body `{"error":{"code":"RATE_LIMIT_EXCEEDED",...}}` with the status of the rejection
   */
  handler?: (req: Request, res: Response, next: NextFunction, rejection: RejectionInfo) => void;
}

/** Express's `trust proxy` setting as stored by `app.set` (false by default). */
const trustSetting = (req: Request): unknown => req.app?.settings?.['trust proxy'];

const access: RequestAccess<Request> = {
  name: 'Express',
  peer: (req) => req.socket.remoteAddress,
  header: (req, name) => nodeHeader(req.headers, name),
  method: (req) => req.method,
  url: (req) => req.originalUrl ?? req.url,
  headers: (req) => req.headers,
  rateLimitOf: (req) => req.rateLimit,
  // express.json() (or another body parser) before this middleware, for the tokenBudget option.
  body: (req) => req.body as unknown,
  // Express's own `trust proxy`, unless sluice's `trustProxy` is given: `req.ip` is the client as
  // Express resolved it (proxy-addr, walking X-Forwarded-For from the right through trusted hops).
  framework: {
    setting: "app.set('trust proxy', …)",
    example: "app.set('trust proxy', 'loopback, 10.0.0.0/8')",
    clientIp: (req) => {
      const setting = trustSetting(req);
      return setting === undefined || setting === false ? undefined : req.ip;
    },
    permissive: (req) => trustSetting(req) === true,
  },
};

const EXTRA_KEYS: ReadonlySet<string> = new Set(['handler']);

/**
 * Creates Express middleware (Express 4 and 5) that limits requests and sets rate-limit headers.
 *
 * @example
 * import express from 'express';
 * import { rateLimit } from 'sluice/express';
 * const app = express();
 * app.use(rateLimit({ algorithm: 'sliding-window', limit: 100, period: '1m' }));
 * app.get('/', (req, res) => res.send('ok'));
 */
export function rateLimit(options: ExpressRateLimitOptions): RequestHandler & RateLimitControls {
  const limiter = createMiddlewareLimiter(options, access, EXTRA_KEYS);
  const handler = options.handler;
  const metered = limiter.tokenBudget !== undefined;
  const watching = limiter.watchesClient;

  function apply(outcome: HttpOutcome, req: Request, res: Response, next: NextFunction): void {
    if (outcome.info !== undefined) req.rateLimit = outcome.info;
    if (outcome.afterResponse !== undefined) afterNodeResponse(res, outcome.afterResponse);
    if (metered && outcome.pass && outcome.meter !== undefined) meterNodeResponse(res, outcome.meter);
    const headers = outcome.headers;
    for (let i = 0; i < headers.length; i += 2) {
      res.setHeader(headers[i] as string, headers[i + 1] as string);
    }
    if (outcome.pass) {
      next();
    } else if (handler !== undefined && outcome.rejection !== undefined) {
      handler(req, res, next, outcome.rejection);
    } else {
      res.statusCode = outcome.status;
      res.setHeader('Content-Type', outcome.contentType);
      res.end(outcome.body);
    }
  }

  function sluiceRateLimit(req: Request, res: Response, next: NextFunction): void {
    let outcome: ReturnType<typeof limiter.decide>;
    try {
      if (watching) watchResponse(req, res);
      outcome = limiter.decide(req);
    } catch (error) {
      next(asError(error));
      return;
    }
    if (outcome instanceof Promise)
      outcome.then(
        (o) => apply(o, req, res, next),
        (e) => next(asError(e)),
      );
    else apply(outcome, req, res, next);
  }
  return Object.assign(sluiceRateLimit, { resetKey: limiter.resetKey, penalty: limiter.penalty, block: limiter.block });
}

export type { RateLimitControls, RateLimitInfo, RateLimitOptions, RejectionInfo };
