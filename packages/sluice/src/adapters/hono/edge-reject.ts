/**
 * The responses of the edge build of `sluice/hono`: the rate-limit headers of every limit applied so far, and a
 * rejection — after giving back what earlier sluice middlewares took for the request, so a rejected request consumes
 * nothing — as the default JSON body, a custom `message`, or the app's own `handler`.
 */
import type { Context } from 'hono';
import { type HeaderMode, listedHeaders, rateLimitHeaders } from '../../http/headers.js';
import {
  type AppliedLimitInfo,
  appendInfo,
  bindingOf,
  giveBackEarlier,
  previousInfo,
  type RateLimitInfo,
  tookEarlier,
} from '../../http/rate-limit-info.js';
import { defaultBody, defaultMessage, type RejectionInfo } from '../../http/rejection.js';
import type { HonoRateLimitOptions } from './options.js';

/** Sets `[name, value, …]` on `target`. */
export function setAll(target: Headers, headers: readonly string[]): void {
  for (let i = 0; i < headers.length; i += 2) target.set(headers[i] as string, headers[i + 1] as string);
}

/** The headers of every limit applied so far (one limit, the usual case, the short way). */
export function headersOf(info: RateLimitInfo, mode: Exclude<HeaderMode, false>): string[] {
  const only = info.limits.length === 1 ? (info.limits[0] as AppliedLimitInfo) : undefined;
  return only !== undefined
    ? rateLimitHeaders(only.decision, only.header, mode)
    : listedHeaders(info.limits, bindingOf(info), mode, 'seconds', 0);
}

/** The rejecter of a middleware with these options; `own` is what this middleware applied (none: a missing key). */
export function createEdgeRejecter(options: HonoRateLimitOptions, mode: HeaderMode) {
  return async (c: Context, rejection: RejectionInfo, own: AppliedLimitInfo[]): Promise<Response> => {
    const previous = previousInfo(c.get('rateLimit'));
    const before = tookEarlier(previous) ? await giveBackEarlier(previous) : previous;
    const info = own.length > 0 ? appendInfo(before, own) : before;
    if (info !== undefined) c.set('rateLimit', info);
    // A request over a limit lists the limits applied; every rejection says when to retry, when it can.
    const headers = rejection.kind === 'limited' && info !== undefined && mode !== false ? headersOf(info, mode) : [];
    if (rejection.retryAfter !== null) headers.push('retry-after', String(rejection.retryAfter));
    if (options.handler !== undefined) {
      const res = await options.handler(c, rejection);
      const copy = new Response(res.body, res);
      setAll(copy.headers, headers);
      return copy;
    }
    const m = options.message;
    const message = typeof m === 'function' ? m(rejection) : (m ?? defaultMessage(rejection));
    const response = new Response(JSON.stringify(defaultBody(rejection, message)), { status: rejection.status });
    setAll(response.headers, headers);
    response.headers.set('content-type', 'application/json');
    return response;
  };
}
