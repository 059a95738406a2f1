/**
 * `explainRequest`: the rules engine's decision for a request, made on the same path but only looking at the
 * counters (nothing consumed), with each descriptor's rule match, `replaces`, shadow and quota, and every limit's state.
 */
import type { Decision } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
import { combineDecisions } from '../limiter/combine.js';
import type { MaybePromise, Store } from '../stores/store.js';
import { decideGeneral } from './decide-general.js';
import { chain, type EngineContext } from './engine-context.js';
import type { DescriptorStatus, RateLimitRequest, RateLimitResponse, RulesEngineOptions } from './engine-types.js';
import { type MatchStep, ruleText, traceMatch } from './explain-match.js';
import { createFailover, type FailItem } from './failover.js';
import { OverrideCache, planRequest } from './plan.js';
import { overrideOf, validateRequest } from './request.js';

export type { MatchStep } from './explain-match.js';

/** One limit's counter as explain saw it. */
export interface ExplainedLimit {
  readonly name?: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly periodMs: number;
  /** Units a request of this cost would leave (as the check reports it). */
  readonly remaining: number;
  /** Whether this limit alone would let the request through. */
  readonly allowed: boolean;
  readonly resetMs: number;
  /** Milliseconds until it would pass; null when never (the cost exceeds the capacity). */
  readonly retryAfterMs: number | null;
  /** `blocked` (a block period runs), `cost-exceeds-capacity`, … */
  readonly reason?: string;
  /** True when the store failed and the rule's failure policy answered. */
  readonly degraded: boolean;
  /** The limit that decides this descriptor's status. */
  readonly binding: boolean;
}

/** One descriptor of the request, explained. */
export interface ExplainedDescriptor {
  readonly entries: readonly { key: string; value: string }[];
  /** What applies: no rule, an `unlimited` rule, a rule's limits, the request's own `limit` override, or a rule whose limits were all replaced. */
  readonly outcome: 'no-rule' | 'unlimited' | 'limited' | 'override' | 'replaced';
  readonly steps: readonly MatchStep[];
  /** Why no rule applies (`no-rule`). */
  readonly why?: string;
  /** The matched rule: its path as written, id, file and line. */
  readonly rule?: { readonly descriptor: string; readonly id: string; readonly file: string; readonly line: number };
  /** The counter key (the descriptor's entries, wildcard values folded when shared). */
  readonly key?: string;
  /** Names of this rule's limits dropped by another matched limit's `replaces`. */
  readonly replaced: readonly string[];
  readonly shadow: boolean;
  readonly quota: boolean;
  readonly limits: readonly ExplainedLimit[];
  /** The status the engine would answer for this descriptor. */
  readonly status: DescriptorStatus;
}

/** What {@link explainRequest} answers. */
export interface RequestExplanation {
  /** The clock when it looked. */
  readonly atMs: number;
  readonly domainKnown: boolean;
  /** What the next check of this request would answer. */
  readonly overallCode: 'OK' | 'OVER_LIMIT';
  /** envoy's global shadow mode turned an OVER_LIMIT into OK. */
  readonly shadowed: boolean;
  /** Some counter could not be read and a failure policy answered. */
  readonly degraded: boolean;
  readonly descriptors: readonly ExplainedDescriptor[];
}

/**
 * Explains what the rules engine built from `options` would answer `request` now, consuming nothing: the
 * engine's own decision path is run with every store call a look (`commit: false`), so the answer is the
 * next check's. Request errors throw as `shouldRateLimit` rejects (coded, see `isRequestError`).
 * @example
 * const why = await explainRequest({ ruleSet, store }, { domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'u1' }] }] });
 * console.log(why.overallCode, why.descriptors[0]?.steps, why.descriptors[0]?.limits);
 */
export function explainRequest(
  options: RulesEngineOptions & { readonly store: Store },
  request: RateLimitRequest,
): MaybePromise<RequestExplanation> {
  const costs = validateRequest(request);
  const atMs = (options.clock ?? { now: Date.now }).now();
  const failover = createFailover(options.store, options.fail, options.insuranceShare);
  const looked = new Map<ResolvedPolicy, Map<string, Decision>>();
  const context: EngineContext = {
    ruleSet: options.ruleSet,
    overrides: new OverrideCache(),
    clock: { now: () => atMs },
    globalShadow: options.shadow === true,
    globalQuota: options.quota === true,
    failover: {
      // Where the engine would commit, a look at the sums; where it only looks (quota mode's first look), the same look.
      check: (items: readonly FailItem[], nowMs: number, commit: boolean) =>
        chain(failover.check(commit ? cumulative(items) : items, nowMs, false), (decisions) => {
          for (const [i, item] of items.entries()) {
            let byKey = looked.get(item.policy);
            if (byKey === undefined) {
              byKey = new Map();
              looked.set(item.policy, byKey);
            }
            byKey.set(item.key, decisions[i] as Decision);
          }
          return decisions;
        }),
    },
  };
  return chain(decideGeneral(context, request), (response) =>
    explanationOf(options, request, costs, context, response, looked, atMs),
  );
}

function explanationOf(
  options: RulesEngineOptions,
  request: RateLimitRequest,
  costs: readonly number[],
  context: EngineContext,
  response: RateLimitResponse,
  looked: Map<ResolvedPolicy, Map<string, Decision>>,
  atMs: number,
): RequestExplanation {
  const rules = options.ruleSet.domains.get(request.domain);
  const plans = planRequest(options.ruleSet, request, costs, context.overrides);
  const descriptors = request.descriptors.map((d, i): ExplainedDescriptor => {
    const status = response.statuses[i] as DescriptorStatus;
    const plan = plans[i];
    const trace =
      rules === undefined
        ? { steps: [], why: `the domain '${request.domain}' has no rules` }
        : traceMatch(rules, d.entries);
    const node = trace.node;
    const base = {
      entries: d.entries.map((e) => ({ key: e.key, value: e.value })),
      steps: trace.steps,
      ...(trace.why === undefined ? {} : { why: trace.why }),
      ...(node === undefined
        ? {}
        : { rule: { descriptor: ruleText(node), id: node.id, file: node.file, line: node.line } }),
      shadow: plan?.kind === 'limited' && plan.shadow,
      quota: status.quota === true,
      status,
    };
    const replacedNames = (kept: readonly { name?: string | undefined }[]) =>
      (node?.limits ?? []).filter((l) => !kept.includes(l)).flatMap((l) => (l.name === undefined ? [] : [l.name]));
    if (plan === undefined || plan.kind === 'none') {
      const outcome =
        node !== undefined && node.limits.length > 0 && overrideOf(d, i) === undefined ? 'replaced' : 'no-rule';
      return { ...base, outcome, replaced: outcome === 'replaced' ? replacedNames([]) : [], limits: [] };
    }
    if (plan.kind === 'unlimited') return { ...base, outcome: 'unlimited', replaced: [], limits: [] };
    const decisions = plan.limits.map((l) => looked.get(l.policy)?.get(plan.key));
    // The binding limit as the engine's status picks it: the combined decision's own limit.
    const known = decisions.filter((dec): dec is Decision => dec !== undefined);
    const binding = known.length === decisions.length ? decisions.indexOf(combineDecisions(known)) : 0;
    const limits = plan.limits.map((l, j): ExplainedLimit => {
      const dec = decisions[j];
      return {
        ...(l.name === undefined ? {} : { name: l.name }),
        algorithm: l.algorithm,
        limit: l.requestsPerUnit,
        periodMs: l.periodMs,
        remaining: Math.max(0, Math.floor(dec?.remaining ?? 0)),
        allowed: dec?.allowed ?? true,
        resetMs: Math.ceil(dec?.resetMs ?? 0),
        retryAfterMs: dec === undefined || !Number.isFinite(dec.retryAfterMs) ? null : Math.ceil(dec.retryAfterMs),
        ...(dec?.reason === undefined ? {} : { reason: dec.reason }),
        degraded: dec?.degraded === true,
        binding: j === Math.max(0, binding),
      };
    });
    return {
      ...base,
      outcome: plan.node === undefined ? 'override' : 'limited',
      key: plan.key,
      replaced: replacedNames(plan.limits),
      limits,
    };
  });
  return {
    atMs,
    domainKnown: rules !== undefined,
    overallCode: response.overallCode,
    shadowed: response.shadowed === true,
    degraded: descriptors.some((d) => d.limits.some((l) => l.degraded)),
    descriptors,
  };
}

/**
 * The items of a look, each costing what the request takes from its counter up to it: a check counts a
 * counter named twice in one request twice (the second sees the first), a look takes nothing, so it is
 * asked for the sum.
 */
function cumulative(items: readonly FailItem[]): readonly FailItem[] {
  if (items.length < 2) return items;
  const taken = new Map<ResolvedPolicy, Map<string, number>>();
  let repeated = false;
  const out = items.map((item) => {
    let byKey = taken.get(item.policy);
    if (byKey === undefined) {
      byKey = new Map();
      taken.set(item.policy, byKey);
    }
    const before = byKey.get(item.key);
    if (before !== undefined) repeated = true;
    const cost = (before ?? 0) + item.cost;
    byKey.set(item.key, cost);
    return cost === item.cost ? item : { ...item, cost };
  });
  return repeated ? out : items;
}
