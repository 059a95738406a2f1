import type { Decision } from '../core/decision.js';
import { limitHeaderInfo, rateLimitHeaders as pairsFor, retryAfterSeconds } from '../http/headers.js';
import type { RejectionKind } from '../http/rejection.js';
import { defaultBody, defaultMessage, rejectionInfo } from '../http/rejection.js';

const infoCache = new Map<string, ReturnType<typeof limitHeaderInfo>>();

/**
 * The rate-limit headers of SPEC section 4 for one decision, built by the HTTP middleware core
 * (src/http) so the service, the gateway and the middleware answer with exactly the same fields; plus
 * `Retry-After` on a rejection. Names are lower-case (HTTP/2 and Envoy's `response_headers_to_add`).
 */
export function rateLimitHeaders(decision: Decision, name: string, windowMs: number): Record<string, string> {
  const cacheKey = `${name}\u0000${windowMs}`;
  let info = infoCache.get(cacheKey);
  if (info === undefined) {
    info = limitHeaderInfo(printable(name), windowMs);
    // Names come from the config (bounded), but keep the cache bounded whatever happens.
    if (infoCache.size >= 10_000) infoCache.clear();
    infoCache.set(cacheKey, info);
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of pairsFor(decision, info, 'both')) headers[k.toLowerCase()] = v;
  if (!decision.allowed) {
    const retry = retryAfterSeconds(decision.retryAfterMs);
    if (retry !== undefined) headers['retry-after'] = String(retry);
  }
  return headers;
}

/** The JSON body of a rejection, as the middleware writes it: `{"error":{"code","message","retry_after"}}`. */
export function rejectionBody(
  kind: RejectionKind,
  decision: Decision | undefined,
  limitName?: string,
): { status: number; body: string } {
  const info = rejectionInfo(kind, decision, limitName, 429);
  return { status: info.status, body: JSON.stringify(defaultBody(info, defaultMessage(info))) };
}

/** An sf-string holds printable ASCII only: replace anything else rather than fail a request over a name. */
function printable(name: string): string {
  return name.replace(/[^\x20-\x7e]/g, '_');
}
