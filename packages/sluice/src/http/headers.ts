/**
 * The rate-limit response headers, `X-RateLimit-*` and the IETF draft's `RateLimit`/`RateLimit-Policy`, as plain data:
 * each limit's fixed parts are formatted once, so a request only fills in its numbers.
 */
import type { Decision } from '../core/decision.js';
import { optionError } from '../core/errors.js';
import type { AlgorithmName } from '../core/policy.js';

/** Which rate-limit headers to send: `X-RateLimit-*`, the IETF draft's `RateLimit`/`RateLimit-Policy`, both, or none. */
export type HeaderMode = 'x' | 'draft' | 'both' | false;

/** How `X-RateLimit-Reset` is written: seconds from now (as `t`), or a Unix time in seconds (GitHub's style). */
export type ResetFormat = 'seconds' | 'epoch';

/**
 * Response headers as plain data: names and values alternating, `[name1, value1, name2, value2, …]`
 * (the layout of Node's `rawHeaders`: one flat array per response, no array per header), set by each
 * adapter in its own way. Names are lower-case: header names are case-insensitive (RFC 9110 §5.1),
 * HTTP/2 and Fastify lower-case them anyway, and a name already lower-case costs Fastify nothing.
 */
export type HeaderList = readonly string[];

/** What the headers say about a limit besides its decision: its name, quota and window. */
export interface LimitHeaderInfo {
  /** The limit's name as an RFC 9651 sf-string, quotes included (`"per-ip"`). */
  readonly quotedName: string;
  /** The window of the quota in whole seconds, rounded up: the period, or the time to refill a bucket. */
  readonly windowS: number;
  /** The limit the fixed strings below were made for (decisions of the limit carry the same). */
  readonly limit: number;
  /** The quota (`q`, `X-RateLimit-Limit`): what `remaining` counts down from — the bucket size for bucket algorithms. */
  readonly quota: number;
  /** `String(quota)`, made once. */
  readonly limitText: string;
  /** The `RateLimit-Policy` item, made once. */
  readonly policyText: string;
  /** How the limit counts, when known: decides what `t` (more quota available in …) is. */
  readonly algorithm: AlgorithmName | undefined;
  readonly periodMs: number;
  /** A concurrency limit: no window, no `t`; never what `X-RateLimit-*` describe. */
  readonly concurrent?: boolean;
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
    if (c < 0x20 || c > 0x7e)
      throw optionError(option, `'${value}' cannot be sent in a RateLimit header; use printable ASCII only`);
    if (c === 0x22 || c === 0x5c) out += '\\';
    out += value[i];
  }
  return `${out}"`;
}

/** The policy facts `limitHeaderInfo` can use to make the headers exact. */
export interface PolicyFacts {
  readonly algorithm: AlgorithmName;
  /** The bucket size (burst) for bucket algorithms, else the limit. */
  readonly capacity: number;
}

/**
 * Builds the header facts of a limit once, so no request formats its name or policy again.
 *
 * The quota `q` is what `remaining` counts down from, so the two never contradict each other: for a
 * token bucket of `burst: 50` refilled at 10 per minute that is 50, over the window it takes to refill
 * it (`w=300`), and a client that spreads `q` requests over `w` seconds is never limited.
 */
export function limitHeaderInfo(
  name: string,
  periodMs: number,
  limit: number,
  option = 'name',
  facts?: PolicyFacts,
): LimitHeaderInfo {
  const quotedName = toSfString(name, option);
  const quota = facts === undefined ? limit : facts.capacity;
  const windowMs = quota !== limit && limit > 0 ? (periodMs * quota) / limit : periodMs;
  const windowS = Math.max(1, toSeconds(windowMs));
  return {
    quotedName,
    windowS,
    limit,
    quota,
    limitText: String(quota),
    policyText: `${quotedName};q=${quota};w=${windowS}`,
    algorithm: facts?.algorithm,
    periodMs,
  };
}

/**
 * Milliseconds until more quota is available, the `t` of draft-ietf-httpapi-ratelimit-headers-11
 * ("the number of seconds until additional quota associated with the quota policy is made
 * available"), from a decision and its policy:
 * - rejected: when this request could pass (nothing becomes available to it sooner), so `t` never
 *   points past `Retry-After`, as the draft asks;
 * - a fixed window frees its quota at the window's end; a sliding window once the current window's
 *   counts start to fade; a sliding log as its entries expire (the last one is the bound known here);
 * - a bucket drips: the next whole unit is due after the fraction already refilled;
 * - a full quota has nothing more to free: 0.
 */
export function nextQuotaMs(decision: Decision, info: LimitHeaderInfo): number {
  if (!decision.allowed && Number.isFinite(decision.retryAfterMs)) return decision.retryAfterMs;
  const { remaining, resetMs } = decision;
  if (remaining >= info.quota || resetMs <= 0) return 0;
  switch (info.algorithm) {
    case 'sliding-window': {
      // Counts in the current window (resetMs > period) start to fade only once it has ended: with
      // nothing from the window before, the first of them is gone period/counted later; counts from
      // the window before make room sooner, so this is exact or a bound (and resetMs is the last).
      const P = info.periodMs;
      if (resetMs <= P) return resetMs;
      const counted = Math.max(1, info.limit - remaining);
      return Math.min(resetMs, resetMs - P + Math.ceil(P / counted));
    }
    case 'token-bucket':
    case 'leaky-bucket':
    case 'gcra': {
      const interval = info.limit > 0 ? info.periodMs / info.limit : info.periodMs;
      return Math.max(0, resetMs - (info.quota - remaining - 1) * interval);
    }
    default:
      return resetMs;
  }
}

/** One limit applied to a request: what the headers list for it. */
export interface AppliedLimit {
  readonly name: string;
  readonly header: LimitHeaderInfo;
  readonly decision: Decision;
}

/**
 * The rate-limit headers of a decision: `X-RateLimit-Limit`, `X-RateLimit-Remaining`,
 * `X-RateLimit-Reset`, and the structured fields of draft-ietf-httpapi-ratelimit-headers (drafts
 * 08–11): `RateLimit-Policy: "<name>";q=<quota>;w=<window-s>` and `RateLimit: "<name>";r=<remaining>;t=<s>`.
 * `X-RateLimit-Degraded: 1` is added when the decision was taken without the store (fail-open).
 * `Retry-After` is not among them: it belongs to the rejection (the responder adds it).
 * @param nowMs - the time of the decision, needed only for `reset: 'epoch'`.
 * @example rateLimitHeaders(decision, limitHeaderInfo('per-ip', 60_000, 100), 'both')
 */
export function rateLimitHeaders(
  decision: Decision,
  info: LimitHeaderInfo,
  mode: HeaderMode,
  reset: ResetFormat = 'seconds',
  nowMs = 0,
): string[] {
  if (mode === false) return [];
  const degraded = decision.degraded === true;
  // No limit applied (every limit's key was null): there is nothing to describe.
  if (!Number.isFinite(decision.limit)) return degraded ? ['x-ratelimit-degraded', '1'] : [];
  const same = decision.limit === info.limit;
  const quota = same ? info.limitText : String(decision.limit);
  const remaining = String(Math.min(decision.remaining, same ? info.quota : decision.limit));
  const tS = toSeconds(nextQuotaMs(decision, info));
  const t = String(tS);
  const state =
    info.concurrent === true ? `${info.quotedName};r=${remaining}` : `${info.quotedName};r=${remaining};t=${t}`;
  const policy = same ? info.policyText : `${info.quotedName};q=${quota};w=${info.windowS}`;
  const xReset = reset === 'epoch' ? String(Math.ceil(nowMs / 1000) + tS) : t;
  // One array literal per mode: this runs on every request.
  const headers =
    mode === 'both'
      ? [
          'x-ratelimit-limit',
          quota,
          'x-ratelimit-remaining',
          remaining,
          'x-ratelimit-reset',
          xReset,
          'ratelimit-policy',
          policy,
          'ratelimit',
          state,
        ]
      : mode === 'x'
        ? ['x-ratelimit-limit', quota, 'x-ratelimit-remaining', remaining, 'x-ratelimit-reset', xReset]
        : ['ratelimit-policy', policy, 'ratelimit', state];
  if (degraded) headers.push('x-ratelimit-degraded', '1');
  return headers;
}

/**
 * The headers of several limits applied to one request — by one middleware or by several stacked
 * ones: `RateLimit-Policy` and `RateLimit` list every policy (RFC 9651 lists, in the order applied),
 * and the `X-RateLimit-*` fields describe `binding`, the one closest to exhaustion.
 */
export function listedHeaders(
  applied: readonly AppliedLimit[],
  binding: AppliedLimit,
  mode: HeaderMode,
  reset: ResetFormat,
  nowMs: number,
): string[] {
  if (mode === false) return [];
  const headers = mode === 'draft' ? [] : rateLimitHeaders(binding.decision, binding.header, 'x', reset, nowMs);
  if (mode !== 'x') {
    const policies: string[] = [];
    const states: string[] = [];
    for (const a of applied) {
      if (!Number.isFinite(a.decision.limit)) continue;
      const [, policy, , state] = rateLimitHeaders(a.decision, a.header, 'draft');
      policies.push(policy as string);
      states.push(state as string);
    }
    headers.push('ratelimit-policy', policies.join(', '), 'ratelimit', states.join(', '));
  }
  if (applied.some((a) => a.decision.degraded === true) && !headers.includes('x-ratelimit-degraded')) {
    headers.push('x-ratelimit-degraded', '1');
  }
  return headers;
}

/** `Retry-After` in whole seconds (at least 1), or undefined when the request can never pass. */
export function retryAfterSeconds(retryAfterMs: number): number | undefined {
  if (!Number.isFinite(retryAfterMs)) return undefined;
  return Math.max(1, toSeconds(retryAfterMs));
}
