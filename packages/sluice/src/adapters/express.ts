/**
 * `sluice/express` — rate limiting for Express 4 and 5.
 * @packageDocumentation
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  createHttpLimiter,
  type HttpOutcome,
  nodeHeader,
  type RateLimitOptions,
  type RejectionInfo,
  type RequestAccess,
} from '../http/index.js';

/** Options of the Express middleware: the common options (SPEC §4) plus a native rejection handler. */
export interface ExpressRateLimitOptions extends RateLimitOptions<Request> {
  /**
   * Answers a rejection yourself (the rate-limit headers and `Retry-After` are already set).
   * @default a JSON body `{"error":{"code":"RATE_LIMIT_EXCEEDED",...}}` with the status of the rejection
   */
  handler?: (req: Request, res: Response, next: NextFunction, rejection: RejectionInfo) => void;
}

const access: RequestAccess<Request> = {
  // The TCP peer, not req.ip: which proxies to believe is sluice's `trustProxy`, not Express's setting.
  peer: (req) => req.socket.remoteAddress,
  header: (req, name) => nodeHeader(req.headers, name),
  method: (req) => req.method,
  url: (req) => req.originalUrl ?? req.url,
  headers: (req) => req.headers,
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
export function rateLimit(options: ExpressRateLimitOptions): RequestHandler {
  const limiter = createHttpLimiter(options, access, EXTRA_KEYS);
  const handler = options.handler;

  function apply(outcome: HttpOutcome, req: Request, res: Response, next: NextFunction): void {
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

  return function sluiceRateLimit(req, res, next) {
    let outcome: ReturnType<typeof limiter.decide>;
    try {
      outcome = limiter.decide(req);
    } catch (error) {
      next(error);
      return;
    }
    if (outcome instanceof Promise) outcome.then((o) => apply(o, req, res, next), next);
    else apply(outcome, req, res, next);
  };
}

export type { RateLimitOptions, RejectionInfo };
