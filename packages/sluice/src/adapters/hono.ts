/**
 * `sluice/hono` — rate limiting for Hono. Nothing on this path imports `node:*`: the client address
 * is read from each runtime's own connection information on Node (`@hono/node-server`), Bun, Deno and
 * Cloudflare Workers (hono/peer.ts); elsewhere pass `peerAddress` (or a `key`).
 * @packageDocumentation
 */
import type { Context, MiddlewareHandler, Next } from 'hono';
import { watchClientSignal } from '../http/client-watch.js';
import {
  createMiddlewareLimiter,
  type HttpOutcome,
  type RateLimitControls,
  type RateLimitInfo,
  type RateLimitOptions,
  type RejectionInfo,
  type RequestAccess,
} from '../http/index.js';
import { meterWebBody } from '../http/meter-response.js';
import type { HonoRateLimitOptions } from './hono/options.js';
import { createPeerReader, peerOf } from './hono/peer.js';

const access: RequestAccess<Context> = {
  name: 'Hono',
  // Node's (@hono/node-server); rateLimit() puts the reader of the runtime it runs on in its place.
  peer: (c) => peerOf(c, 'node'),
  header: (c, name) => c.req.header(name),
  method: (c) => c.req.method,
  url: (c) => {
    const url = c.req.url;
    const start = url.indexOf('/', url.indexOf('//') + 2);
    return start === -1 ? '/' : url.slice(start);
  },
  headers: (c) => c.req.header(),
  rateLimitOf: (c) => c.get('rateLimit'),
  // Hono keeps the parsed body, so the handler can read it again.
  body: (c) => (c.req.header('content-type')?.includes('json') ? c.req.json().catch(() => undefined) : undefined),
};

const EXTRA_KEYS: ReadonlySet<string> = new Set(['handler']);

function setAll(target: Headers, headers: HttpOutcome['headers']): void {
  for (let i = 0; i < headers.length; i += 2) target.set(headers[i] as string, headers[i + 1] as string);
}

/** Sets headers on the response the handler made; copies it once if its headers are immutable. */
function setHeaders(c: Context, headers: HttpOutcome['headers']): void {
  if (headers.length === 0) return;
  try {
    setAll(c.res.headers, headers);
  } catch {
    // A Response from fetch() (or Response.redirect) has immutable headers.
    c.res = new Response(c.res.body, c.res);
    setAll(c.res.headers, headers);
  }
}

/**
 * Creates Hono middleware that limits requests and sets rate-limit headers.
 *
 * @example
 * import { Hono } from 'hono';
 * import { rateLimit } from 'sluice/hono';
 * const app = new Hono();
 * app.use(rateLimit({ limit: 100, period: '1m' }));
 * app.get('/', (c) => c.text('ok'));
 */
export function rateLimit(options: HonoRateLimitOptions): MiddlewareHandler & RateLimitControls {
  // The peer as this runtime reports it (hono/peer.ts); throws now where no address can be had.
  const limiter = createMiddlewareLimiter(options, { ...access, peer: createPeerReader(options) }, EXTRA_KEYS);
  const handler = options.handler;
  const metered = limiter.tokenBudget !== undefined;
  const watching = limiter.watchesClient;

  async function sluiceRateLimit(c: Context, next: Next) {
    if (watching) watchClientSignal(c, () => c.req.raw.signal);
    const outcome = await limiter.decide(c);
    if (outcome.info !== undefined) c.set('rateLimit', outcome.info);
    if (outcome.pass) {
      await next();
      // Set after the handler: headers prepared earlier are lost when it returns its own Response.
      // A sluice middleware inside this one lists this one's policies too: its headers win.
      const inner = c.get('rateLimit');
      setHeaders(c, inner === outcome.info ? outcome.headers : []);
      // Errors in the handler have become c.res (Hono's onError) by now: its status is the response's.
      if (outcome.afterResponse !== undefined) void outcome.afterResponse(c.res.status);
      // The body is forwarded as it comes and read for its usage on the way (tokenBudget).
      if (metered && outcome.meter !== undefined)
        c.res = new Response(meterWebBody(c.res.body, c.res.status, outcome.meter), c.res);
      return;
    }
    if (handler !== undefined && outcome.rejection !== undefined) {
      const res = await handler(c, outcome.rejection);
      const copy = new Response(res.body, res);
      setAll(copy.headers, outcome.headers);
      return copy;
    }
    const headers = new Headers();
    setAll(headers, outcome.headers);
    headers.set('Content-Type', outcome.contentType);
    return new Response(outcome.body, { status: outcome.status, headers });
  }
  return Object.assign(sluiceRateLimit, { resetKey: limiter.resetKey, penalty: limiter.penalty, block: limiter.block });
}

export type { HonoRateLimitOptions, RateLimitControls, RateLimitInfo, RateLimitOptions, RejectionInfo };
