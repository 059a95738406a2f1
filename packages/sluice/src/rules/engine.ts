import { systemClock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { MaybePromise } from '../stores/store.js';
import { describeRules } from './describe.js';
import type {
  DescriptorStatus,
  RateLimitRequest,
  RateLimitResponse,
  RulesEngine,
  RulesEngineOptions,
} from './engine-types.js';
import { createFailover, type FailItem } from './failover.js';
import { type DescriptorPlan, OverrideCache, planRequest } from './plan.js';
import { validateRequest } from './request.js';
import { limitedStatus, noLimitStatus, unlimitedStatus } from './status.js';
import type { RuleSet } from './types.js';

type Limited = Extract<DescriptorPlan, { kind: 'limited' }>;

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
  const failover = createFailover(store, options.fail, options.insuranceShare);
  const overrides = new OverrideCache();

  function decide(request: RateLimitRequest): MaybePromise<RateLimitResponse> {
    const costs = validateRequest(request);
    const plans = planRequest(ruleSet, request, costs, overrides);
    const nowMs = clock.now();
    const enforced: { plan: Limited; index: number }[] = [];
    const shadowed: { plan: Limited; index: number }[] = [];
    for (const [index, plan] of plans.entries()) {
      if (plan.kind !== 'limited') continue;
      (plan.shadow || globalShadow ? shadowed : enforced).push({ plan, index });
    }
    const statuses: DescriptorStatus[] = plans.map((plan) =>
      plan.kind === 'unlimited' ? unlimitedStatus(plan.node.id) : noLimitStatus(),
    );
    if (enforced.length === 0 && shadowed.length === 0) return respond(statuses);

    const enforcedItems = enforced.flatMap(({ plan }) => itemsOf(plan));
    return chain(failover.check(enforcedItems, nowMs, true), (decisions) => {
      let offset = 0;
      let passed = true;
      for (const { plan, index } of enforced) {
        const own = decisions.slice(offset, offset + plan.limits.length);
        offset += plan.limits.length;
        const status = limitedStatus(plan, own, nowMs, false);
        if (status.code === 'OVER_LIMIT') passed = false;
        statuses[index] = status;
      }
      if (shadowed.length === 0) return respond(statuses);
      // Shadow rules count the request only if it passed, like any limit; each is judged on its own.
      const checks = shadowed.map(({ plan, index }) =>
        chain(failover.check(itemsOf(plan), nowMs, passed), (own) => {
          statuses[index] = limitedStatus(plan, own, nowMs, true);
        }),
      );
      return checks.some((c) => c instanceof Promise)
        ? Promise.all(checks).then(() => respond(statuses))
        : respond(statuses);
    });
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

function respond(statuses: DescriptorStatus[]): RateLimitResponse {
  const over = statuses.some((s) => s.code === 'OVER_LIMIT');
  return { overallCode: over ? 'OVER_LIMIT' : 'OK', statuses };
}

/** `then` that stays synchronous for synchronous values: the memory store answers without promises. */
function chain<T, U>(value: MaybePromise<T>, next: (v: T) => MaybePromise<U>): MaybePromise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

function isRuleSet(value: unknown): value is RuleSet {
  const r = value as RuleSet;
  return typeof r === 'object' && r !== null && r.domains instanceof Map && Array.isArray(r.files);
}
