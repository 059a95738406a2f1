/** sluice's rate-limit headers and 429 bodies for the service's answers, the same as the middleware's. */
import type { Decision } from 'sluice';
import type { LimitHeaderInfo, PolicyFacts, RejectionInfo, RejectionKind } from 'sluice/http';
import {
  defaultBody,
  defaultMessage,
  rateLimitHeaders as headerListFor,
  limitHeaderInfo,
  REJECTION_STATUS,
  retryAfterSeconds,
} from 'sluice/http';

const infoCache = new Map<string, LimitHeaderInfo>();

/**
 * The rate-limit headers (docs/middleware.md) for one decision, built by the HTTP middleware core
 * (`sluice/http`) so the service, the gateway and the middleware answer with exactly the same fields;
 * plus `Retry-After` on a rejection. Names are lower-case (HTTP/2 and Envoy's `response_headers_to_add`).
 * `facts` (the algorithm and a bucket's capacity) make `q`, `r` and `t` those of the policy: a bucket's
 * quota is its capacity, as `limitRemaining` counts.
 */
export function rateLimitHeaders(
  decision: Decision,
  name: string,
  windowMs: number,
  facts?: PolicyFacts,
): Record<string, string> {
  // One entry per name (a name's policy rarely changes): no key string to build per decision.
  let info = infoCache.get(name);
  if (
    info === undefined ||
    info.periodMs !== windowMs ||
    info.limit !== decision.limit ||
    info.algorithm !== facts?.algorithm ||
    info.quota !== (facts?.capacity ?? decision.limit)
  ) {
    info = limitHeaderInfo(printable(name), windowMs, decision.limit, 'name', facts);
    // Names come from the config (bounded), but keep the cache bounded whatever happens.
    if (infoCache.size >= 10_000) infoCache.clear();
    infoCache.set(name, info);
  }
  const headers: Record<string, string> = {};
  const list = headerListFor(decision, info, 'both');
  for (let i = 0; i + 1 < list.length; i += 2) headers[(list[i] as string).toLowerCase()] = list[i + 1] as string;
  if (!decision.allowed) {
    const retry = retryAfterSeconds(decision.retryAfterMs);
    if (retry !== undefined) headers['retry-after'] = String(retry);
  }
  return headers;
}

/** The status and JSON body of a rejection, as the middleware writes them: `{"error":{"code","message","retry_after"}}`. */
export function rejectionBody(
  kind: RejectionKind,
  decision: Decision | undefined,
  limitName?: string,
): { status: number; body: string } {
  let retryAfter: number | null = null;
  // A deny-list match has no time to offer; a store that is down gets one second so clients back off.
  if (kind === 'limited' && decision !== undefined) retryAfter = retryAfterSeconds(decision.retryAfterMs) ?? null;
  if (kind === 'unavailable') retryAfter = 1;
  const info: RejectionInfo = { kind, status: REJECTION_STATUS[kind], retryAfter, decision, limitName };
  return { status: info.status, body: JSON.stringify(defaultBody(info, defaultMessage(info))) };
}

/** An sf-string holds printable ASCII only: replace anything else rather than fail a request over a name. */
function printable(name: string): string {
  return name.replace(/[^\x20-\x7e]/g, '_');
}
