/**
 * `sluice/node` — rate limiting for a plain `node:http` request listener.
 * @packageDocumentation
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
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

/** A request after the wrapper: what sluice decided is on it, as in Express. */
export type LimitedRequest = IncomingMessage & { rateLimit?: RateLimitInfo };

/** A `node:http` request listener. */
export type Listener = (req: IncomingMessage, res: ServerResponse) => unknown;

/** Options of the `node:http` wrapper: the common options plus native handlers. */
export interface NodeRateLimitOptions extends RateLimitOptions<IncomingMessage> {
  /** Answers a rejection yourself (the rate-limit headers and `Retry-After` are already set). */
  handler?: (req: IncomingMessage, res: ServerResponse, rejection: RejectionInfo) => void;
  /**
   * Called when deciding fails (an option function threw, the store failed with no `fail` policy).
   * @default answers 500 with an empty body
   */
  onError?: (error: unknown, req: IncomingMessage, res: ServerResponse) => void;
}

const access: RequestAccess<IncomingMessage> = {
  peer: (req) => req.socket.remoteAddress,
  header: (req, name) => nodeHeader(req.headers, name),
  method: (req) => req.method ?? 'GET',
  url: (req) => req.url ?? '/',
  headers: (req) => req.headers,
  rateLimitOf: (req) => (req as LimitedRequest).rateLimit,
};

const EXTRA_KEYS: ReadonlySet<string> = new Set(['handler', 'onError']);

function internalError(_error: unknown, _req: IncomingMessage, res: ServerResponse): void {
  if (!res.headersSent) res.statusCode = 500;
  res.end();
}

/**
 * Wraps a `node:http` request listener so requests over the limit are answered before it runs.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { rateLimit } from 'sluice/node';
 * const limit = rateLimit({ limit: 100, period: '1m' });
 * createServer(limit((req, res) => res.end('ok'))).listen(3000);
 */
export function rateLimit(options: NodeRateLimitOptions): ((listener: Listener) => Listener) & RateLimitControls {
  const limiter = createMiddlewareLimiter(options, access, EXTRA_KEYS);
  const { handler, onError = internalError } = options;
  const metered = limiter.tokenBudget !== undefined;
  const watching = limiter.watchesClient;

  function apply(outcome: HttpOutcome, req: IncomingMessage, res: ServerResponse, listener: Listener): void {
    if (outcome.info !== undefined) (req as LimitedRequest).rateLimit = outcome.info;
    if (outcome.afterResponse !== undefined) afterNodeResponse(res, outcome.afterResponse);
    if (metered && outcome.pass && outcome.meter !== undefined) meterNodeResponse(res, outcome.meter);
    const headers = outcome.headers;
    for (let i = 0; i < headers.length; i += 2) {
      res.setHeader(headers[i] as string, headers[i + 1] as string);
    }
    if (outcome.pass) {
      listener(req, res);
      return;
    }
    if (handler !== undefined && outcome.rejection !== undefined) {
      handler(req, res, outcome.rejection);
      return;
    }
    res.statusCode = outcome.status;
    res.setHeader('Content-Type', outcome.contentType);
    res.end(outcome.body);
  }

  const wrap = (listener: Listener): Listener =>
    function sluiceRateLimit(req, res) {
      let outcome: ReturnType<typeof limiter.decide>;
      try {
        if (watching) watchResponse(req, res);
        outcome = limiter.decide(req);
      } catch (error) {
        onError(error, req, res);
        return;
      }
      if (outcome instanceof Promise) {
        outcome.then(
          (o) => apply(o, req, res, listener),
          (error: unknown) => onError(error, req, res),
        );
      } else {
        apply(outcome, req, res, listener);
      }
    };
  return Object.assign(wrap, { resetKey: limiter.resetKey, penalty: limiter.penalty, block: limiter.block });
}

export type { RateLimitControls, RateLimitInfo, RateLimitOptions, RejectionInfo };
