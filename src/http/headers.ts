import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';

/** Which rate-limit headers to send: `X-RateLimit-*`, the IETF draft's `RateLimit`/`RateLimit-Policy`, both, or none. */
export type HeaderMode = 'x' | 'draft' | 'both' | false;

/** Response headers as plain data: `[name, value]` pairs, set by each adapter in its own way. */
export type HeaderPair = readonly [name: string, value: string];

/** What the headers say about a limit besides its decision: its name and window. */
export interface LimitHeaderInfo {
  /** The limit's name as an RFC 9651 sf-string, quotes included (`"per-ip"`). */
  readonly quotedName: string;
  /** The window in whole seconds, rounded up. */
  readonly windowS: number;
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

/** Builds the header facts of a limit once, so no request formats its name again. */
export function limitHeaderInfo(name: string, periodMs: number, option = 'name'): LimitHeaderInfo {
  return { quotedName: toSfString(name, option), windowS: toSeconds(periodMs) };
}

/**
 * The rate-limit headers of a decision (SPEC §4):
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds until reset), and the
 * structured fields of draft-ietf-httpapi-ratelimit-headers (drafts 08–10):
 * `RateLimit-Policy: "<name>";q=<limit>;w=<window-s>` and `RateLimit: "<name>";r=<remaining>;t=<reset-s>`.
 * `X-RateLimit-Degraded: 1` is added when the decision was taken without the store (fail-open).
 * `Retry-After` is not among them: it belongs to the rejection (see `rejectionHeaders`).
 * @example rateLimitHeaders(decision, limitHeaderInfo('per-ip', 60_000), 'both')
 */
export function rateLimitHeaders(decision: Decision, info: LimitHeaderInfo, mode: HeaderMode): HeaderPair[] {
  if (mode === false) return [];
  const headers: HeaderPair[] = [];
  // No limit applied (every limit's key was null): there is nothing to describe.
  if (Number.isFinite(decision.limit)) {
    const remaining = String(decision.remaining);
    const resetS = String(toSeconds(decision.resetMs));
    if (mode !== 'draft') {
      headers.push(
        ['X-RateLimit-Limit', String(decision.limit)],
        ['X-RateLimit-Remaining', remaining],
        ['X-RateLimit-Reset', resetS],
      );
    }
    if (mode !== 'x') {
      headers.push(
        ['RateLimit-Policy', `${info.quotedName};q=${decision.limit};w=${info.windowS}`],
        ['RateLimit', `${info.quotedName};r=${remaining};t=${resetS}`],
      );
    }
  }
  if (decision.degraded === true) headers.push(['X-RateLimit-Degraded', '1']);
  return headers;
}

/** `Retry-After` in whole seconds (at least 1), or undefined when the request can never pass. */
export function retryAfterSeconds(retryAfterMs: number): number | undefined {
  if (!Number.isFinite(retryAfterMs)) return undefined;
  return Math.max(1, toSeconds(retryAfterMs));
}
