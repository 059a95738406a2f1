/**
 * What every decision of the rules engine reads (the current rules, the store behind the failure policy, the clock,
 * the global modes) and the small steps its decisions share: a plan's store items, the overall answer, `chain`.
 */
import type { Clock } from '../core/clock.js';
import type { MaybePromise } from '../stores/store.js';
import type { DescriptorStatus, RateLimitResponse } from './engine-types.js';
import type { createFailover, FailItem } from './failover.js';
import type { DescriptorPlan, OverrideCache } from './plan.js';
import type { RuleSet } from './types.js';

/** A descriptor's plan that has limits to check. */
export type Limited = Extract<DescriptorPlan, { kind: 'limited' }>;
/** A limited plan and the index of its descriptor in the request (and in the statuses). */
export type Entry = { plan: Limited; index: number };

/** The engine's state for its decisions; `ruleSet` is swapped by setRuleSet. */
export interface EngineContext {
  ruleSet: RuleSet;
  readonly failover: ReturnType<typeof createFailover>;
  readonly overrides: OverrideCache;
  readonly clock: Clock;
  /** envoy's global shadow mode: an over-limit request is answered OK. */
  readonly globalShadow: boolean;
  /** envoy's global quota mode: every descriptor is a quota descriptor. */
  readonly globalQuota: boolean;
}

/**
 * The overall code: OVER_LIMIT when an enforced descriptor is over, or (`rejected`) the quota descriptors
 * all are. envoy's global shadow mode then answers OK, leaving the statuses as they are.
 */
export function respond(context: EngineContext, statuses: DescriptorStatus[], rejected: boolean): RateLimitResponse {
  let over = rejected;
  for (let i = 0; i < statuses.length && !over; i++) {
    const s = statuses[i] as DescriptorStatus;
    over = s.code === 'OVER_LIMIT' && !s.quota;
  }
  if (over && context.globalShadow) return { overallCode: 'OK', statuses, shadowed: true };
  return { overallCode: over ? 'OVER_LIMIT' : 'OK', statuses };
}

/** The store items of a plan: one per limit, all on the plan's key. */
export function itemsOf(plan: Limited): FailItem[] {
  return plan.limits.map((limit) => ({ key: plan.key, policy: limit.policy, cost: plan.cost, fail: plan.fail }));
}

/** The store items of several plans, in order. */
export function itemsOfAll(entries: readonly Entry[]): FailItem[] {
  return entries.flatMap(({ plan }) => itemsOf(plan));
}

/** `then` that stays synchronous for synchronous values: the memory store answers without promises. */
export function chain<T, U>(value: MaybePromise<T>, next: (v: T) => MaybePromise<U>): MaybePromise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}
