/**
 * The rules engine's general path: every descriptor planned (overrides, `replaces`, shadow, quota mode), the
 * enforced ones decided in one atomic store step, quota descriptors looked at first, shadow rules counted after.
 */
import type { Decision } from '../core/decision.js';
import type { MaybePromise } from '../stores/store.js';
import { chain, type EngineContext, type Entry, itemsOf, itemsOfAll, respond } from './engine-context.js';
import type { DescriptorStatus, RateLimitRequest, RateLimitResponse } from './engine-types.js';
import { planRequest } from './plan.js';
import { validateRequest } from './request.js';
import { limitedStatus, noLimitStatus, unlimitedStatus } from './status.js';

/** One request's decision in progress: its time, domain and the statuses being filled in. */
interface Round {
  readonly context: EngineContext;
  readonly nowMs: number;
  readonly domain: string;
  readonly statuses: DescriptorStatus[];
}

/** Decides a request of any shape: passes only if every enforced descriptor passes, consuming from none if not. */
export function decideGeneral(context: EngineContext, request: RateLimitRequest): MaybePromise<RateLimitResponse> {
  const costs = validateRequest(request);
  const plans = planRequest(context.ruleSet, request, costs, context.overrides);
  const enforced: Entry[] = [];
  const quota: Entry[] = [];
  const shadowed: Entry[] = [];
  // envoy ratelimit's quota mode: a descriptor with no limit still counts as a quota descriptor that passed.
  let quotaPassing = 0;
  for (const [index, plan] of plans.entries()) {
    if (plan.kind === 'none' && context.globalQuota) quotaPassing++;
    if (plan.kind !== 'limited') continue;
    if (plan.shadow) shadowed.push({ plan, index });
    else if (context.globalQuota || plan.node?.quotaMode) quota.push({ plan, index });
    else enforced.push({ plan, index });
  }
  const statuses: DescriptorStatus[] = plans.map((plan) =>
    plan.kind === 'unlimited' ? unlimitedStatus(plan.node.id) : noLimitStatus(),
  );
  if (enforced.length === 0 && quota.length === 0 && shadowed.length === 0) return respond(context, statuses, false);
  const round: Round = { context, nowMs: context.clock.now(), domain: request.domain, statuses };
  const passed =
    quota.length === 0
      ? chain(context.failover.check(itemsOfAll(enforced), round.nowMs, true), (decisions) =>
          settle(round, enforced, decisions),
        )
      : decideWithQuota(round, enforced, quota, quotaPassing);
  return chain(passed, (ok) => afterEnforced(round, shadowed, ok));
}

/** Fills in the statuses of `entries` from their decisions (in order); true when every one passed. */
function settle(round: Round, entries: readonly Entry[], decisions: readonly Decision[]): boolean {
  let offset = 0;
  let passed = true;
  for (const { plan, index } of entries) {
    const n = plan.limits.length;
    // One descriptor (the usual request) owns every decision: no copy.
    const own = offset === 0 && n === decisions.length ? decisions : decisions.slice(offset, offset + n);
    offset += n;
    const status = limitedStatus(plan, own, round.nowMs, false, round.domain);
    if (status.code === 'OVER_LIMIT') passed = false;
    round.statuses[index] = status;
  }
  return passed;
}

/** Shadow rules count the request only if it passed, like any limit; each is judged on its own and never rejects. */
function afterEnforced(round: Round, shadowed: readonly Entry[], passed: boolean): MaybePromise<RateLimitResponse> {
  const { context, statuses, nowMs, domain } = round;
  if (shadowed.length === 0) return respond(context, statuses, !passed);
  const checks = shadowed.map(({ plan, index }) =>
    chain(context.failover.check(itemsOf(plan), nowMs, passed), (own) => {
      statuses[index] = limitedStatus(plan, own, nowMs, true, domain);
    }),
  );
  return checks.some((c) => c instanceof Promise)
    ? Promise.all(checks).then(() => respond(context, statuses, !passed))
    : respond(context, statuses, !passed);
}

/**
 * Quota descriptors (envoy ratelimit's `quota_mode`) are looked at first: the request fails on them only
 * when every one is over. Then the enforced descriptors and the quota descriptors that fit are checked
 * together, all or nothing, so a rejected request still consumes nothing.
 */
function decideWithQuota(
  round: Round,
  enforced: readonly Entry[],
  quota: readonly Entry[],
  quotaPassing: number,
): MaybePromise<boolean> {
  const { context, nowMs, domain, statuses } = round;
  return chain(context.failover.check(itemsOfAll(quota), nowMs, false), (looked) => {
    let offset = 0;
    const fitting: Entry[] = [];
    for (const entry of quota) {
      const own = looked.slice(offset, offset + entry.plan.limits.length);
      offset += entry.plan.limits.length;
      if (own.every((d) => d.allowed)) fitting.push(entry);
      else statuses[entry.index] = { ...limitedStatus(entry.plan, own, nowMs, false, domain), quota: true };
    }
    const allOver = fitting.length === 0 && quotaPassing === 0;
    const together = [...enforced, ...fitting];
    return chain(context.failover.check(itemsOfAll(together), nowMs, !allOver), (decisions) => {
      const passed = settle(round, together, decisions);
      for (const { index } of quota) (statuses[index] as DescriptorStatus).quota = true;
      return passed && !allOver;
    });
  });
}
