import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';

/** Which rate-limit headers to send: `X-RateLimit-*`, the IETF draft's `RateLimit`/`RateLimit-Policy`, both, or none. */
export type HeaderMode = 'x' | 'draft' | 'both' | false;

/**
 * Response headers as plain data: names and values alternating, `[name1, value1, name2, value2, …]`
 * (the layout of Node's `rawHeaders`: one flat array per response, no array per header), set by each
 * adapter in its own way. Names are lower-case: header names are case-insensitive (RFC 9110 §5.1),
 * HTTP/2 and Fastify lower-case them anyway, and a name already lower-case costs Fastify nothing.
 */
export type HeaderList = readonly string[];

/** What the headers say about a limit besides its decision: its name and window. */
export interface LimitHeaderInfo {
  /** The limit's name as an RFC 9651 sf-string, quotes included (`"per-ip"`). */
  readonly quotedName: string;
  /** The window in whole seconds, rounded up. */
  readonly windowS: number;
  /** The limit the fixed strings below were made for (decisions of the limit carry the same). */
  readonly limit: number;
  /** `String(limit)`, made once. */
  readonly limitText: string;
  /** The `RateLimit-Policy` value, made once. */
  readonly policyText: string;
}

/** Seconds from milliseconds, rounded up: a client that waits this long is never early. */
export const toSeconds = (ms: number): number => Math.ceil(ms / 1000);

/**
 * Serialises `value` as an RFC 9651 §4.1.6 sf-string (quoted, `"` and `\` escaped).
 * @throws SluiceError `ERR_SLUICE_INVALID_OPTION` when it holds characters an sf-string cannot
 *   (only printable ASCII is allowed).
 */
export function toSfString(value: string, option = 'name'): string {
  let out = '"';
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `${option}: '${value}' cannot be sent in a RateLimit header; use printable ASCII only`,
        { option },
      );
    }
    if (c === 0x22 || c === 0x5c) out += '\\';
    out += value[i];
  }
  return `${out}"`;
}

/** Builds the header facts of a limit once, so no request formats its name or policy again. */
export function limitHeaderInfo(name: string, periodMs: number, limit: number, option = 'name'): LimitHeaderInfo {
  const quotedName = toSfString(name, option);
  const windowS = toSeconds(periodMs);
  return { quotedName, windowS, limit, limitText: String(limit), policyText: `${quotedName};q=${limit};w=${windowS}` };
}

/**
 * The rate-limit headers of a decision (SPEC §4):
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds until reset), and the
 * structured fields of draft-ietf-httpapi-ratelimit-headers (drafts 08–10):
 * `RateLimit-Policy: "<name>";q=<limit>;w=<window-s>` and `RateLimit: "<name>";r=<remaining>;t=<reset-s>`.
 * `X-RateLimit-Degraded: 1` is added when the decision was taken without the store (fail-open).
 * `Retry-After` is not among them: it belongs to the rejection (see `rejectionHeaders`).
 * @example rateLimitHeaders(decision, limitHeaderInfo('per-ip', 60_000, 100), 'both')
 */
export function rateLimitHeaders(decision: Decision, info: LimitHeaderInfo, mode: HeaderMode): string[] {
  if (mode === false) return [];
  const degraded = decision.degraded === true;
  // No limit applied (every limit's key was null): there is nothing to describe.
  if (!Number.isFinite(decision.limit)) return degraded ? ['x-ratelimit-degraded', '1'] : [];
  const same = decision.limit === info.limit;
  const limit = same ? info.limitText : String(decision.limit);
  const remaining = String(decision.remaining);
  const resetS = String(toSeconds(decision.resetMs));
  const state = `${info.quotedName};r=${remaining};t=${resetS}`;
  const policy = same ? info.policyText : `${info.quotedName};q=${limit};w=${info.windowS}`;
  // One array literal per mode: this runs on every request.
  const headers =
    mode === 'both'
      ? [
          'x-ratelimit-limit',
          limit,
          'x-ratelimit-remaining',
          remaining,
          'x-ratelimit-reset',
          resetS,
          'ratelimit-policy',
          policy,
          'ratelimit',
          state,
        ]
      : mode === 'x'
        ? ['x-ratelimit-limit', limit, 'x-ratelimit-remaining', remaining, 'x-ratelimit-reset', resetS]
        : ['ratelimit-policy', policy, 'ratelimit', state];
  if (degraded) headers.push('x-ratelimit-degraded', '1');
  return headers;
}

/** `Retry-After` in whole seconds (at least 1), or undefined when the request can never pass. */
export function retryAfterSeconds(retryAfterMs: number): number | undefined {
  if (!Number.isFinite(retryAfterMs)) return undefined;
  return Math.max(1, toSeconds(retryAfterMs));
}
