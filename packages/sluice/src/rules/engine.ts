/**
 * The rules engine: it answers envoy ratelimit's question (may these descriptors of this domain pass?) from a RuleSet,
 * deciding a whole request in one atomic store step, all or nothing.
 */
import { systemClock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { MaybePromise } from '../stores/store.js';
import { decideGeneral } from './decide-general.js';
import { decideSingle } from './decide-single.js';
import { describeRules } from './describe.js';
import type { EngineContext } from './engine-context.js';
import type { RateLimitRequest, RateLimitResponse, RulesEngine, RulesEngineOptions } from './engine-types.js';
import { createFailover } from './failover.js';
import { checkHttpRequest } from './http/check-http.js';
import { OverrideCache, planRequest } from './plan.js';
import { validateRequest } from './request.js';
import type { RuleSet } from './types.js';

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
  const ownStore = options.store === undefined;
  const store = options.store ?? createMemoryStore();

  const context: EngineContext = {
    ruleSet: options.ruleSet,
    failover: createFailover(store, options.fail, options.insuranceShare),
    overrides: new OverrideCache(),
    clock: options.clock ?? systemClock,
    globalShadow: options.shadow === true,
    globalQuota: options.quota === true,
  };

  function decide(request: RateLimitRequest): MaybePromise<RateLimitResponse> {
    if (Array.isArray(request?.descriptors) && request.descriptors.length === 1) {
      const single = decideSingle(context, request);
      if (single !== undefined) return single;
    }
    return decideGeneral(context, request);
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
    checkHttp: (request) => checkHttpRequest(context.ruleSet, decide, request),
    async reset(request) {
      validateRequest(request);
      const work: unknown[] = [];
      for (const descriptor of request.descriptors) {
        // One descriptor at a time, so no other descriptor's `replaces` hides a limit from the reset.
        const [plan] = planRequest(
          context.ruleSet,
          { domain: request.domain, descriptors: [descriptor] },
          [0],
          context.overrides,
        );
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
      context.ruleSet = next;
    },
    get ruleSet() {
      return context.ruleSet;
    },
    store,
    describeRules: () => describeRules(context.ruleSet),
    async close() {
      if (ownStore) await store.close();
    },
  };
}

function isRuleSet(value: unknown): value is RuleSet {
  const r = value as RuleSet;
  return typeof r === 'object' && r !== null && r.domains instanceof Map && Array.isArray(r.files);
}
