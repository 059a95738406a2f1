/**
 * What each descriptor of a request is checked against: its matched rule, the limits left after `replaces`, the counter
 * key and cost, or the request's own `limit` override (whose limits are cached).
 */
import { resolvePolicy } from '../core/policy.js';
import type { RateLimitRequest } from './engine-types.js';
import { entriesKey, matchDescriptor } from './match.js';
import { encodePart } from './parse/parse-descriptors.js';
import { overrideOf } from './request.js';
import type { DescriptorNode, FailMode, RuleLimit, RuleSet } from './types.js';
import { UNIT_MS } from './units.js';

/** What one request descriptor will be checked against. */
export type DescriptorPlan =
  | { readonly kind: 'none' }
  | { readonly kind: 'unlimited'; readonly node: DescriptorNode }
  | {
      readonly kind: 'limited';
      /** The matched rule; undefined for a request's `limit` override. */
      readonly node?: DescriptorNode;
      readonly limits: readonly RuleLimit[];
      readonly key: string;
      readonly cost: number;
      readonly shadow: boolean;
      readonly fail: FailMode | undefined;
      /** The request descriptor's entries (for stats keys). */
      readonly entries: readonly { key: string; value: string }[];
    };

const NONE: DescriptorPlan = { kind: 'none' };

/**
 * Matches every descriptor of a request to its rule and applies `replaces`, as envoy ratelimit does:
 * a limit whose name appears in the `replaces` of any limit matched by the same request is dropped
 * (and so not counted). An unlimited rule stays unlimited even when replaced.
 */
export function planRequest(
  ruleSet: RuleSet,
  request: RateLimitRequest,
  costs: readonly number[],
  overrides: OverrideCache,
): DescriptorPlan[] {
  const rules = ruleSet.domains.get(request.domain);
  // An unknown domain limits nothing, even with a limit override (as in envoy ratelimit).
  if (rules === undefined) return request.descriptors.map(() => NONE);
  // Made only when a matched rule replaces something (few do): this runs for every request.
  let replacing: Set<string> | undefined;
  const plans = request.descriptors.map((d, i): DescriptorPlan => {
    const cost = costs[i] as number;
    const override = overrideOf(d, i);
    if (override) {
      const limit = overrides.get(request.domain, override.requestsPerUnit, override.unit);
      return {
        kind: 'limited',
        limits: [limit],
        key: entriesKey(d.entries),
        cost,
        shadow: false,
        fail: rules.fail,
        entries: d.entries,
      };
    }
    const match = matchDescriptor(rules, d.entries);
    if (match === undefined) return NONE;
    const { node } = match;
    if (node.replaces.length > 0) {
      replacing ??= new Set();
      for (const name of node.replaces) replacing.add(name);
    }
    if (node.unlimited) return { kind: 'unlimited', node };
    if (node.limits.length === 0) return NONE;
    return {
      kind: 'limited',
      node,
      limits: node.limits,
      key: match.key,
      cost,
      shadow: node.shadow,
      fail: node.fail,
      entries: d.entries,
    };
  });
  if (replacing === undefined) return plans;
  const replaced = replacing;
  return plans.map((plan) => {
    if (plan.kind !== 'limited' || plan.node === undefined) return plan;
    const kept = plan.limits.filter((l) => l.name === undefined || !replaced.has(l.name));
    if (kept.length === plan.limits.length) return plan;
    return kept.length === 0 ? NONE : { ...plan, limits: kept };
  });
}

/** Builds (and remembers) the limits of `limit` overrides, so a hot path does not re-validate them. */
export class OverrideCache {
  private readonly cache = new Map<string, RuleLimit>();

  get(domain: string, requestsPerUnit: number, unit: keyof typeof UNIT_MS): RuleLimit {
    const id = `${encodePart(domain)}|override#${requestsPerUnit}/${unit}`;
    let limit = this.cache.get(id);
    if (limit === undefined) {
      const periodMs = UNIT_MS[unit];
      // Overrides are fixed windows, like every envoy limit; the same uint32 range as the config.
      const base = resolvePolicy({ algorithm: 'fixed-window', limit: 1, period: periodMs });
      limit = {
        requestsPerUnit,
        unit,
        periodMs,
        algorithm: 'fixed-window',
        replaces: [],
        policy: {
          ...base,
          limit: requestsPerUnit,
          capacity: requestsPerUnit,
          burst: requestsPerUnit,
          id: `${encodePart(domain)}|override~fw/${periodMs}`,
        },
        id,
      };
      // Overrides come from requests: keep the cache bounded whatever clients send.
      if (this.cache.size >= 1000) this.cache.clear();
      this.cache.set(id, limit);
    }
    return limit;
  }
}
