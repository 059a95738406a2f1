/**
 * `req.rateLimit` and its siblings: what sluice decided about a request, for the handler, gathered across every sluice
 * middleware the request went through and led by the limit closest to exhaustion.
 */
import type { Decision } from '../core/decision.js';
import { combineDecisions } from '../limiter/combine.js';
import type { CheckOptions, Limiter, LimiterDecision, LimiterKey } from '../limiter/create-limiter.js';
import { type AppliedLimit, type LimitHeaderInfo, nextQuotaMs } from './headers.js';
import type { LimitSet, SetLimit } from './limits.js';

/**
 * What sluice decided about a request, put on it for the handler: `req.rateLimit` (Express, Fastify,
 * `node:http`), `ctx.state.rateLimit` (Koa), `c.get('rateLimit')` (Hono). It describes the limit
 * closest to exhaustion among every limit applied to the request — by this middleware and any sluice
 * middleware before it — and lists them all under `limits`.
 */
export interface RateLimitInfo {
  /** The name of the limit closest to exhaustion (the one `X-RateLimit-*` describe). */
  readonly name: string;
  /** Its quota (`X-RateLimit-Limit`). */
  readonly limit: number;
  /** What is left of it (`X-RateLimit-Remaining`). */
  readonly remaining: number;
  /** What is used of it: `limit - remaining` (express-rate-limit's `used`). */
  readonly used: number;
  /** Milliseconds until more of it is available (the `t` of the `RateLimit` header, in ms). */
  readonly resetMs: number;
  /** When more of it is available, as a `Date` (express-rate-limit's `resetTime`), read when asked. */
  readonly resetTime: Date;
  /** Whether the request passes every limit applied so far. */
  readonly allowed: boolean;
  /** Milliseconds until this request would pass: 0 when allowed, Infinity when it never can. */
  readonly retryAfterMs: number;
  /** The key it was counted under. */
  readonly key: string | undefined;
  /** That limit's full decision. */
  readonly decision: Decision;
  /** Every limit applied to the request, in the order applied. */
  readonly limits: readonly AppliedLimitInfo[];
}

/** One limit applied to a request, and how it decided. */
export interface AppliedLimitInfo extends AppliedLimit {
  readonly key: string | undefined;
}

/** Marks sluice's own info objects (not another library's `req.rateLimit`), across module copies. */
const BRAND = Symbol.for('sluice.rateLimitInfo');

class Info implements RateLimitInfo {
  readonly [BRAND] = true;
  /** The limit `X-RateLimit-*` describe. */
  readonly binding: AppliedLimitInfo;

  constructor(
    readonly limits: readonly AppliedLimitInfo[],
    /** The infos of earlier middlewares that took and have not given back. */
    readonly earlier: readonly Info[],
    /** What the middleware that made this info took, to give back (undefined: nothing). */
    readonly limiter?: Pick<Limiter, 'refund'>,
    readonly takenKey?: LimiterKey,
    readonly takenOptions?: CheckOptions,
    readonly takenLimits?: readonly AppliedLimitInfo[],
  ) {
    this.binding = limits.length === 1 ? (limits[0] as AppliedLimitInfo) : bindingAmong(limits);
  }
  get name(): string {
    return this.binding.name;
  }
  get limit(): number {
    return this.binding.header.quota;
  }
  get remaining(): number {
    return Math.min(this.binding.decision.remaining, this.binding.header.quota);
  }
  get used(): number {
    return this.limit - this.remaining;
  }
  get resetTime(): Date {
    return new Date(Date.now() + this.resetMs);
  }
  get resetMs(): number {
    return nextQuotaMs(this.binding.decision, this.binding.header);
  }
  get allowed(): boolean {
    return this.limits.every((l) => l.decision.allowed);
  }
  get retryAfterMs(): number {
    return this.binding.decision.retryAfterMs;
  }
  get key(): string | undefined {
    return this.binding.key;
  }
  get decision(): Decision {
    return this.binding.decision;
  }
  toJSON() {
    const { name, limit, remaining, used, resetMs, allowed, retryAfterMs, key } = this;
    return { name, limit, remaining, used, resetMs, allowed, retryAfterMs, key };
  }
}

/** sluice's info on a request from an earlier middleware, or undefined. */
export function previousInfo(value: unknown): RateLimitInfo | undefined {
  return typeof value === 'object' && value !== null && (value as { [BRAND]?: boolean })[BRAND] === true
    ? (value as RateLimitInfo)
    : undefined;
}

/**
 * The limit closest to exhaustion among several (as `combineDecisions` picks). X-RateLimit-* describe a rate limit
 * (they have a reset): a concurrency limit only when it rejected.
 */
function bindingAmong(limits: readonly AppliedLimitInfo[]): AppliedLimitInfo {
  const rated = limits.filter((l) => l.header.concurrent !== true || !l.decision.allowed);
  const among = rated.length > 0 ? rated : limits;
  const chosen = combineDecisions(among.map((l) => l.decision));
  return among.find((l) => l.decision === chosen) ?? (among[0] as AppliedLimitInfo);
}

/**
 * The info after this middleware's limits, appended to what earlier middlewares applied; the binding
 * limit is the one closest to exhaustion over all of them (as `combineDecisions` picks).
 */
export function appendInfo(
  previous: RateLimitInfo | undefined,
  own: readonly AppliedLimitInfo[],
  limiter?: Pick<Limiter, 'refund'>,
  key?: LimiterKey,
  options?: CheckOptions,
  takenLimits: readonly AppliedLimitInfo[] = own,
): RateLimitInfo {
  const taken = limiter === undefined ? undefined : takenLimits;
  if (previous === undefined) return new Info(own, NONE, limiter, key, options, taken);
  return new Info([...previous.limits, ...own], takersOf(previous as Info), limiter, key, options, taken);
}

/** One limit of a set as applied to a request: its decision under `key`. */
export function appliedLimit(
  limit: { readonly name: string; readonly header: LimitHeaderInfo },
  decision: Decision,
  key: string | undefined,
): AppliedLimitInfo {
  return { name: limit.name, header: limit.header, decision, key };
}

const NONE: readonly Info[] = [];

/** The infos of the middlewares that took for a request and have not given back, up to `info`'s. */
function takersOf(info: Info): readonly Info[] {
  if (info.limiter === undefined) return info.earlier;
  return info.earlier.length === 0 ? [info] : [...info.earlier, info];
}

/**
 * Gives back what earlier middlewares took for a request that is now rejected, and returns their info
 * as it stands after (each given-back limit with its units back in `remaining`), or undefined.
 */
export async function giveBackEarlier(previous: RateLimitInfo | undefined): Promise<RateLimitInfo | undefined> {
  if (previous === undefined) return undefined;
  const takers = takersOf(previous as Info);
  if (takers.length === 0) return previous;
  await Promise.all(takers.map((t) => t.limiter?.refund(t.takenKey as LimiterKey, t.takenOptions)));
  const limits = previous.limits.map((l) => {
    const t = takers.find((x) => x.takenLimits?.includes(l) === true);
    if (t === undefined) return l;
    const remaining = Math.min(l.decision.remaining + (t.takenOptions?.cost ?? 1), l.header.quota);
    return { ...l, decision: { ...l.decision, remaining } };
  });
  // Rebuilt with nothing taken: what was given back is never given back twice.
  return new Info(limits, NONE);
}

/** Whether earlier middlewares took something that `giveBackEarlier` would give back. */
export function tookEarlier(previous: RateLimitInfo | undefined): boolean {
  return previous !== undefined && ((previous as Info).limiter !== undefined || (previous as Info).earlier.length > 0);
}

/**
 * Whether what a middleware took for a request (`mine`: the info it made) has been given back, as the
 * request's info `now` says (its response then settles nothing).
 */
export function givenBack(now: RateLimitInfo | undefined, mine: RateLimitInfo): boolean {
  return now !== undefined && !takersOf(now as Info).includes(mine as Info);
}

/** The limit `X-RateLimit-*` describe. */
export function bindingOf(info: RateLimitInfo): AppliedLimitInfo {
  return (info as Info).binding;
}

/** The limits of a set as applied to one request, each with its own decision and key. */
export function appliedOf<Req>(set: LimitSet<Req>, key: LimiterKey, decision: LimiterDecision): AppliedLimitInfo[] {
  if (set.single)
    return [appliedLimit(set.limits[0] as SetLimit<Req>, decision, typeof key === 'string' ? key : undefined)];
  const out: AppliedLimitInfo[] = [];
  for (const r of decision.results ?? []) {
    const limit = set.limits.find((l) => l.name === r.name);
    if (limit !== undefined) out.push({ name: r.name, header: limit.header, decision: r.decision, key: r.key });
  }
  return out;
}

export type { LimitHeaderInfo };
