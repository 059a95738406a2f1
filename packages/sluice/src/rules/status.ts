/**
 * What the engine answers per descriptor, in Envoy's terms: OK or OVER_LIMIT, the current limit, what remains and when
 * it resets, for a limited, unlimited or unmatched descriptor.
 */
import type { Decision } from '../core/decision.js';
import { isBucketAlgorithm } from '../core/policy.js';
import { combineDecisions } from '../limiter/combine.js';
import type { CurrentLimit, DescriptorStatus } from './engine-types.js';
import { metricKey } from './metric-key.js';
import type { DescriptorPlan } from './plan.js';
import type { RuleLimit } from './types.js';
import { asUnitRate } from './units.js';

/** envoy ratelimit's `limit_remaining` for an unlimited rule: uint32 max. */
export const UNLIMITED_REMAINING = 4_294_967_295;

/**
 * The `currentLimit` of each limit, built once: it depends on the limit alone, and building it per
 * decision (two object spreads and a unit conversion) was the rules engine's largest cost. Shared by
 * every status of that limit, so frozen.
 */
const CURRENT_LIMITS = new WeakMap<RuleLimit, CurrentLimit>();

function currentLimitOf(limit: RuleLimit): CurrentLimit {
  let current = CURRENT_LIMITS.get(limit);
  if (current === undefined) {
    const rate = limit.unit
      ? { requestsPerUnit: limit.requestsPerUnit, unit: limit.unit }
      : asUnitRate(limit.requestsPerUnit, limit.periodMs);
    current = Object.freeze({
      ...(limit.name === undefined ? {} : { name: limit.name }),
      ...rate,
      limit: limit.requestsPerUnit,
      periodMs: limit.periodMs,
      algorithm: limit.algorithm,
      ...(limit.burst === undefined || !isBucketAlgorithm(limit.algorithm) ? {} : { burst: limit.burst }),
    });
    CURRENT_LIMITS.set(limit, current);
  }
  return current;
}

/** The status of a descriptor no limit applies to. */
export function noLimitStatus(): DescriptorStatus {
  return { code: 'OK', limitRemaining: 0, durationUntilResetMs: 0 };
}

/** The status of a descriptor matched by an `unlimited: true` rule. */
export function unlimitedStatus(ruleId: string): DescriptorStatus {
  return { code: 'OK', limitRemaining: UNLIMITED_REMAINING, durationUntilResetMs: 0, ruleId };
}

/**
 * The status of a limited descriptor from its limits' decisions: the binding limit (the rejecting one,
 * else the one closest to exhaustion) decides the code and is the one reported.
 */
export function limitedStatus(
  plan: Extract<DescriptorPlan, { kind: 'limited' }>,
  decisions: readonly Decision[],
  nowMs: number,
  shadow: boolean,
  domain: string,
): DescriptorStatus {
  const combined = combineDecisions(decisions);
  const index = Math.max(0, decisions.indexOf(combined));
  const limit = plan.limits[index] as RuleLimit;
  const status: DescriptorStatus = {
    code: combined.allowed || shadow ? 'OK' : 'OVER_LIMIT',
    currentLimit: currentLimitOf(limit),
    limitRemaining: Math.max(0, Math.floor(combined.remaining)),
    durationUntilResetMs: untilReset(limit, combined, nowMs),
    decision: combined,
  };
  if (limit.name !== undefined) status.ruleName = limit.name;
  if (plan.node) status.ruleId = plan.node.id;
  const node = plan.node;
  if (node?.detailedMetric) status.detailedMetric = true;
  if (node?.dynamicMetric) status.metricKey = metricKey(domain, node.metricLevels, plan.entries, node.detailedMetric);
  if (node?.metadata !== undefined) status.metadata = node.metadata;
  if (shadow && !combined.allowed) status.shadow = true;
  return status;
}

function untilReset(limit: RuleLimit, d: Decision, nowMs: number): number {
  if (limit.algorithm === 'fixed-window') {
    // envoy ratelimit always reports the time to the end of the current window, even for an untouched key.
    return d.resetMs > 0 ? d.resetMs : limit.periodMs - (nowMs % limit.periodMs);
  }
  if (!d.allowed && Number.isFinite(d.retryAfterMs)) return Math.ceil(d.retryAfterMs);
  return Math.ceil(d.resetMs);
}
