/**
 * The rules engine: it answers envoy ratelimit's question (may these descriptors of this domain pass?) from a RuleSet,
 * deciding a whole request in one atomic store step, all or nothing.
 */
import { systemClock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { MaybePromise } from '../stores/store.js';
import { describeRules } from './describe.js';
import type {
  DescriptorStatus,
  RateLimitRequest,
  RateLimitResponse,
  RequestDescriptor,
  RulesEngine,
  RulesEngineOptions,
} from './engine-types.js';
import { createFailover, type FailItem } from './failover.js';
import { matchDescriptor } from './match.js';
import { type DescriptorPlan, OverrideCache, planRequest } from './plan.js';
import { validateRequest, validateSingle } from './request.js';
import { limitedStatus, noLimitStatus, unlimitedStatus } from './status.js';
import type { RuleSet } from './types.js';

type Limited = Extract<DescriptorPlan, { kind: 'limited' }>;
type Entry = { plan: Limited; index: number };

/**
 * Creates the engine that answers envoy ratelimit's question — may these descriptors of this domain
 * pass? — from a RuleSet. One call decides the whole request: it passes only if every enforced
 * descriptor passes, and a rejected request consumes from none of them (one atomic `checkMany` on the
 * store). Shadow-mode rules are checked after: they count only requests that passed, and never reject.
 *
 * @example
 * const engine = createRulesEngine({ ruleSet, store: createMemoryStore() });
 * const { overallCode, statuses } = await engine.shouldRateLimit({
 *   domain: 'mongo_cps',
 *   descriptors: [{ entries: [{ key: 'database', value: 'users' }] }],
 * });
 */
export function createRulesEngine(options: RulesEngineOptions): RulesEngine {
  if (options === null || typeof options !== 'object' || !isRuleSet(options.ruleSet)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'ruleSet: expected a RuleSet from loadRules() or parseRules()', {
      option: 'ruleSet',
    });
  }
  let ruleSet = options.ruleSet;
  const ownStore = options.store === undefined;
  const store = options.store ?? createMemoryStore();
  const clock = options.clock ?? systemClock;
  const globalShadow = options.shadow === true;
  const globalQuota = options.quota === true;
  const failover = createFailover(store, options.fail, options.insuranceShare);
  const overrides = new OverrideCache();

  /**
   * The overall code: OVER_LIMIT when an enforced descriptor is over, or (`rejected`) the quota descriptors
   * all are. envoy's global shadow mode then answers OK, leaving the statuses as they are.
   */
  function respond(statuses: DescriptorStatus[], rejected: boolean): RateLimitResponse {
    let over = rejected;
    for (let i = 0; i < statuses.length && !over; i++) {
      const s = statuses[i] as DescriptorStatus;
      over = s.code === 'OVER_LIMIT' && !s.quota;
    }
    if (over && globalShadow) return { overallCode: 'OK', statuses, shadowed: true };
    return { overallCode: over ? 'OVER_LIMIT' : 'OK', statuses };
  }

  /**
   * The usual request — one descriptor, matched to a rule with enforced limits and nothing that needs the
   * general path (no `limit` override, shadow, quota or `replaces`) — decided with no plan list, no
   * entry lists and no closures: the same answer as {@link decide}'s general path, in fewer allocations
   * (this runs for every decision). Undefined when the request needs the general path.
   */
  function decideSingle(request: RateLimitRequest): MaybePromise<RateLimitResponse> | undefined {
    const cost = validateSingle(request);
    const descriptor = request.descriptors[0] as RequestDescriptor;
    if (globalQuota || (descriptor.limit !== undefined && descriptor.limit !== null)) return undefined;
    const rules = ruleSet.domains.get(request.domain);
    const match = rules === undefined ? undefined : matchDescriptor(rules, descriptor.entries);
    if (match === undefined) return respond([noLimitStatus()], false);
    const node = match.node;
    if (node.replaces.length > 0 || node.shadow || node.quotaMode) return undefined;
    if (node.unlimited) return respond([unlimitedStatus(node.id)], false);
    if (node.limits.length === 0) return respond([noLimitStatus()], false);
    const plan: Limited = {
      kind: 'limited',
      node,
      limits: node.limits,
      key: match.key,
      cost,
      shadow: false,
      fail: node.fail,
      entries: descriptor.entries,
    };
    const nowMs = clock.now();
    const checked = failover.check(itemsOf(plan), nowMs, true);
    if (checked instanceof Promise) return checked.then((decisions) => settleSingle(plan, decisions, nowMs, request));
    return settleSingle(plan, checked, nowMs, request);
  }

  function settleSingle(
    plan: Limited,
    decisions: readonly Decision[],
    nowMs: number,
    request: RateLimitRequest,
  ): RateLimitResponse {
    const status = limitedStatus(plan, decisions, nowMs, false, request.domain);
    return respond([status], status.code === 'OVER_LIMIT');
  }

  function decide(request: RateLimitRequest): MaybePromise<RateLimitResponse> {
    if (Array.isArray(request?.descriptors) && request.descriptors.length === 1) {
      const single = decideSingle(request);
      if (single !== undefined) return single;
    }
    const costs = validateRequest(request);
    const plans = planRequest(ruleSet, request, costs, overrides);
    const nowMs = clock.now();
    const { domain } = request;
    const enforced: Entry[] = [];
    const quota: Entry[] = [];
    const shadowed: Entry[] = [];
    // envoy ratelimit's quota mode: a descriptor with no limit still counts as a quota descriptor that passed.
    let quotaPassing = 0;
    for (const [index, plan] of plans.entries()) {
      if (plan.kind === 'none' && globalQuota) quotaPassing++;
      if (plan.kind !== 'limited') continue;
      if (plan.shadow) shadowed.push({ plan, index });
      else if (globalQuota || plan.node?.quotaMode) quota.push({ plan, index });
      else enforced.push({ plan, index });
    }
    const statuses: DescriptorStatus[] = plans.map((plan) =>
      plan.kind === 'unlimited' ? unlimitedStatus(plan.node.id) : noLimitStatus(),
    );
    if (enforced.length === 0 && quota.length === 0 && shadowed.length === 0) return respond(statuses, false);

    const afterEnforced = (passed: boolean): MaybePromise<RateLimitResponse> => {
      if (shadowed.length === 0) return respond(statuses, !passed);
      // Shadow rules count the request only if it passed, like any limit; each is judged on its own.
      const checks = shadowed.map(({ plan, index }) =>
        chain(failover.check(itemsOf(plan), nowMs, passed), (own) => {
          statuses[index] = limitedStatus(plan, own, nowMs, true, domain);
        }),
      );
      return checks.some((c) => c instanceof Promise)
        ? Promise.all(checks).then(() => respond(statuses, !passed))
        : respond(statuses, !passed);
    };
    const settle = (entries: readonly Entry[], decisions: readonly Decision[]): boolean => {
      let offset = 0;
      let passed = true;
      for (const { plan, index } of entries) {
        const n = plan.limits.length;
        // One descriptor (the usual request) owns every decision: no copy.
        const own = offset === 0 && n === decisions.length ? decisions : decisions.slice(offset, offset + n);
        offset += n;
        const status = limitedStatus(plan, own, nowMs, false, domain);
        if (status.code === 'OVER_LIMIT') passed = false;
        statuses[index] = status;
      }
      return passed;
    };
    if (quota.length === 0) {
      return chain(
        failover.check(
          enforced.flatMap(({ plan }) => itemsOf(plan)),
          nowMs,
          true,
        ),
        (decisions) => afterEnforced(settle(enforced, decisions)),
      );
    }
    return chain(decideWithQuota(enforced, quota, quotaPassing, nowMs, settle, domain, statuses), afterEnforced);
  }

  /**
   * Quota descriptors (envoy ratelimit's `quota_mode`) are looked at first: the request fails on them only
   * when every one is over. Then the enforced descriptors and the quota descriptors that fit are checked
   * together, all or nothing, so a rejected request still consumes nothing.
   */
  function decideWithQuota(
    enforced: readonly Entry[],
    quota: readonly Entry[],
    quotaPassing: number,
    nowMs: number,
    settle: (entries: readonly Entry[], decisions: readonly Decision[]) => boolean,
    domain: string,
    statuses: DescriptorStatus[],
  ): MaybePromise<boolean> {
    return chain(
      failover.check(
        quota.flatMap(({ plan }) => itemsOf(plan)),
        nowMs,
        false,
      ),
      (looked) => {
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
        return chain(
          failover.check(
            together.flatMap(({ plan }) => itemsOf(plan)),
            nowMs,
            !allOver,
          ),
          (decisions) => {
            const passed = settle(together, decisions);
            for (const { index } of quota) (statuses[index] as DescriptorStatus).quota = true;
            return passed && !allOver;
          },
        );
      },
    );
  }
  return {
    shouldRateLimit(request) {
      try {
        const result = decide(request);
        return result instanceof Promise ? result : Promise.resolve(result);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    decide,
    async reset(request) {
      validateRequest(request);
      const work: unknown[] = [];
      for (const descriptor of request.descriptors) {
        // One descriptor at a time, so no other descriptor's `replaces` hides a limit from the reset.
        const [plan] = planRequest(ruleSet, { domain: request.domain, descriptors: [descriptor] }, [0], overrides);
        if (plan?.kind !== 'limited') continue;
        for (const limit of plan.limits) work.push(store.reset(plan.key, limit.policy));
      }
      await Promise.all(work);
    },
    setRuleSet(next) {
      if (!isRuleSet(next)) {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          'setRuleSet: expected a RuleSet from loadRules() or parseRules()',
        );
      }
      ruleSet = next;
    },
    get ruleSet() {
      return ruleSet;
    },
    store,
    describeRules: () => describeRules(ruleSet),
    async close() {
      if (ownStore) await store.close();
    },
  };
}

function itemsOf(plan: Limited): FailItem[] {
  return plan.limits.map((limit) => ({ key: plan.key, policy: limit.policy, cost: plan.cost, fail: plan.fail }));
}

/** `then` that stays synchronous for synchronous values: the memory store answers without promises. */
function chain<T, U>(value: MaybePromise<T>, next: (v: T) => MaybePromise<U>): MaybePromise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

function isRuleSet(value: unknown): value is RuleSet {
  const r = value as RuleSet;
  return typeof r === 'object' && r !== null && r.domains instanceof Map && Array.isArray(r.files);
}
