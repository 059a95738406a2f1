/**
 * The shapes of a middleware's compiled limits: a set of limits ready to check (one limiter), and the plan that finds
 * the set of a request.
 */
import type { Clock } from '../core/clock.js';
import type { CheckingLimiter } from '../limiter/create-limiter.js';
import type { Store } from '../stores/store.js';
import type { LimitHeaderInfo } from './headers.js';
import type { MissingKey } from './keys.js';
import type { Awaitable, HttpRequestInfo, RequestFn } from './request.js';

/** Where a limit's key comes from: the middleware's key, a function of the request, or fixed by a spec. */
export type KeySource<Req> =
  | { readonly kind: 'default' }
  | { readonly kind: 'fn'; readonly fn: RequestFn<Req, unknown> }
  | { readonly kind: 'fixed'; readonly key: string | number | null | undefined };

/** A limit of a resolved set: its name, header facts and key source, aligned with `limiter.limits`. */
export interface SetLimit<Req> {
  readonly name: string;
  readonly header: LimitHeaderInfo;
  readonly key: KeySource<Req>;
  /** What a missing key means for this limit. */
  readonly missing: MissingKey;
  /** The option that gave the key, for errors (`key`, `limits[1].key`). */
  readonly keyOption: string;
}

/** The limits that apply to a request, ready to check: one limiter (so one atomic store step). */
export interface LimitSet<Req> {
  readonly limiter: CheckingLimiter;
  readonly limits: readonly SetLimit<Req>[];
  /** True for an inline limit: the limiter takes a plain string key. */
  readonly single: boolean;
}

/** How a middleware finds the limits of a request. */
export interface LimitPlan<Req> {
  /** The set, when no limit depends on the request (the fast path: nothing to resolve). */
  readonly fixed: LimitSet<Req> | undefined;
  /** The set of a request whose limits depend on it. */
  resolve(req: Req, info: HttpRequestInfo): Awaitable<LimitSet<Req>>;
  /** Every set made so far (for resetKey and penalty, which act on every limit of the middleware). */
  sets(): Iterable<LimitSet<Req>>;
}

/** What the limiters of a plan share. */
export interface PlanContext {
  readonly store: Store;
  readonly clock: Clock | undefined;
  readonly shape: boolean;
}

/** The set of a request no limit applies to: its limiter is never called (see `isEmptySet`). */
// biome-ignore lint/suspicious/noExplicitAny: a shared sentinel, valid for every request type
export const EMPTY_SET: LimitSet<any> = { limiter: undefined as unknown as CheckingLimiter, limits: [], single: false };

/** The plan of a middleware whose limits come from rules: it is never asked. */
// biome-ignore lint/suspicious/noExplicitAny: a shared sentinel, valid for every request type
export const NO_PLAN: LimitPlan<any> = { fixed: undefined, resolve: () => EMPTY_SET, sets: () => [] };

/** True for the set of a request that no limit applies to. */
export function isEmptySet<Req>(set: LimitSet<Req>): boolean {
  return set === EMPTY_SET;
}
