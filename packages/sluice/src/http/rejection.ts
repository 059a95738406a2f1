/**
 * Turning a request away: the kinds of rejection and their statuses (429, 403, 503, 400), the default JSON body and
 * message, `Retry-After`, and custom bodies.
 */
import type { Decision } from '../core/decision.js';
import { retryAfterSeconds } from './headers.js';
import { acceptsProblem, PROBLEM_TYPE, problemDetails } from './problem-details.js';

/**
 * Why a request is turned away: over a limit (429), on the deny list (403), the store is down under
 * `fail: 'closed'` (503 — the client is not over its limit, the server cannot tell, and 503 is what
 * clients and proxies already retry), or it lacks its key under `missingKey: 'reject'` (400).
 */
/** `overloaded`: shed by the `adaptive` option (the server's state, not the client's quota). */
export type RejectionKind = 'limited' | 'denied' | 'unavailable' | 'missing-key' | 'overloaded';

/** The status of each kind of rejection, unless `statusCode` overrides the 429. */
export const REJECTION_STATUS: Readonly<Record<RejectionKind, number>> = {
  limited: 429,
  denied: 403,
  unavailable: 503,
  'missing-key': 400,
  overloaded: 503,
};

/** The `error.code` of each kind of rejection in the JSON body. */
export const REJECTION_CODES: Readonly<Record<RejectionKind, string>> = {
  limited: 'RATE_LIMIT_EXCEEDED',
  denied: 'ACCESS_DENIED',
  unavailable: 'RATE_LIMIT_UNAVAILABLE',
  'missing-key': 'RATE_LIMIT_KEY_MISSING',
  overloaded: 'OVERLOADED',
};

/** Everything known about a rejection, for custom bodies and handlers. */
export interface RejectionInfo {
  readonly kind: RejectionKind;
  /** HTTP status to answer with. */
  readonly status: number;
  /** `Retry-After` in seconds (rounded up, at least 1), or null when retrying cannot help. */
  readonly retryAfter: number | null;
  /** The decision behind it; undefined for a deny-list match. */
  readonly decision: Decision | undefined;
  /** The name of the limit that rejected (the one the headers describe). */
  readonly limitName: string | undefined;
}

/** The default JSON body: `{"error":{"code","message","retry_after"}}`. */
export interface RejectionBody {
  error: { code: string; message: string; retry_after: number | null };
}

/** The default message of a rejection. */
export function defaultMessage(info: RejectionInfo): string {
  const seconds = info.retryAfter ?? 1;
  const retry = `retry in ${seconds} second${seconds === 1 ? '' : 's'}.`;
  switch (info.kind) {
    case 'denied':
      return 'Access denied.';
    case 'missing-key':
      return 'This request lacks what identifies its client for rate limiting.';
    case 'overloaded':
      return `The server is overloaded; ${retry}`;
    case 'unavailable':
      return `Rate limiting is unavailable; ${retry}`;
    default:
      if (info.retryAfter === null) return 'This request costs more than the rate limit allows; it can never pass.';
      return `Too many requests; ${retry}`;
  }
}

/** The default body of a rejection. */
export function defaultBody(info: RejectionInfo, message: string): RejectionBody {
  return { error: { code: REJECTION_CODES[info.kind], message, retry_after: info.retryAfter } };
}

/** Builds the facts of a rejection from its kind and decision. */
export function rejectionInfo(
  kind: RejectionKind,
  decision: Decision | undefined,
  limitName: string | undefined,
  limitedStatus: number,
): RejectionInfo {
  let retryAfter: number | null = null;
  if (decision !== undefined && (kind === 'limited' || kind === 'unavailable')) {
    // A store that is down has no time to offer: one second keeps clients from hammering it.
    retryAfter =
      kind === 'unavailable'
        ? (retryAfterSeconds(decision.retryAfterMs || 1000) ?? 1)
        : (retryAfterSeconds(decision.retryAfterMs) ?? null);
  }
  const status = kind === 'limited' ? limitedStatus : REJECTION_STATUS[kind];
  return { kind, status, retryAfter, decision, limitName };
}

const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain; charset=utf-8';

/** The options that shape a rejection's body. */
export interface RenderOptions<Req> {
  message?: string | ((info: RejectionInfo) => string);
  body?: (info: RejectionInfo, req: Req) => unknown;
}

/**
 * Renders rejections: a custom `body`, else RFC 9457 problem details when the request's `Accept` (read
 * by `accept`) asks for them, else the default body (with a custom `message` when given).
 */
export function createRenderer<Req>(
  options: RenderOptions<Req>,
  accept?: (req: Req) => string | undefined,
): (rejection: RejectionInfo, req: Req) => { body: string; contentType: string } {
  // The default body depends only on the kind and the wait: under attack the same few are sent
  // over and over, so each is formatted once.
  const bodies = new Map<string, string>();
  return (rejection, req) => {
    if (options.body !== undefined) {
      const custom = options.body(rejection, req);
      if (typeof custom === 'string') return { body: custom, contentType: TEXT_TYPE };
      return { body: JSON.stringify(custom), contentType: JSON_TYPE };
    }
    const m = options.message;
    if (accept !== undefined && acceptsProblem(accept(req))) {
      // Not cached: it names the policies and their state, which differ from one rejection to the next.
      const detail = typeof m === 'function' ? m(rejection) : (m ?? defaultMessage(rejection));
      const problem = problemDetails(rejection, REJECTION_CODES[rejection.kind], detail);
      return { body: JSON.stringify(problem), contentType: PROBLEM_TYPE };
    }
    if (typeof m === 'function') {
      return { body: JSON.stringify(defaultBody(rejection, m(rejection))), contentType: JSON_TYPE };
    }
    const id = `${rejection.kind}:${rejection.retryAfter}`;
    let body = bodies.get(id);
    if (body === undefined) {
      body = JSON.stringify(defaultBody(rejection, m ?? defaultMessage(rejection)));
      if (bodies.size >= 1000) bodies.clear();
      bodies.set(id, body);
    }
    return { body, contentType: JSON_TYPE };
  };
}
