/**
 * An HTTP request decided by rules: the `http:` section of each domain turns it into descriptors, the engine decides
 * them, and the enforced rules' answers are combined as inline limits' are. The engine offers it as `checkHttp`, so
 * an HTTP middleware reaches this code only through the engine it is given.
 */
import { combineDecisions, decisionWithResults } from '../../limiter/combine.js';
import type { LimitResult } from '../../limiter/limiter-decision.js';
import type { MaybePromise } from '../../stores/store.js';
import type {
  DescriptorStatus,
  HttpCheckRequest,
  HttpRulesVerdict,
  RateLimitRequest,
  RateLimitResponse,
} from '../engine-types.js';
import type { DescriptorLevel, RuleSet } from '../types.js';
import { httpDescriptorsFor } from './descriptors-for.js';

/** A rule's status that is enforced, and the name it is reported under. */
type Applied = { status: DescriptorStatus; name: string };

/** The engine's decision of one domain's descriptors: synchronous when its store is. */
type Decide = (request: RateLimitRequest) => MaybePromise<RateLimitResponse>;

/**
 * Decides an HTTP request by `ruleSet` with the engine's `decide`: the descriptors of each domain's `http:` section
 * (Envoy's route actions), each domain decided atomically, all at once. Undefined when no rule applies. Shadow-mode
 * rules never reject: their would-be rejections are in `shadowed`.
 */
export async function checkHttpRequest(
  ruleSet: RuleSet,
  decide: Decide,
  request: HttpCheckRequest,
): Promise<HttpRulesVerdict | undefined> {
  const domains = httpDescriptorsFor(ruleSet, request);
  if (domains.length === 0) return undefined;
  const hits = request.hitsAddend === undefined ? {} : { hitsAddend: request.hitsAddend };
  const answers = domains.map(({ domain, descriptors }) => settle(decide, { domain, descriptors, ...hits }));
  // The memory store answers at once: wait only when some answer is a promise.
  const responses = answers.some((a) => a instanceof Promise)
    ? await Promise.all(answers)
    : (answers as RateLimitResponse[]);
  const applied: Applied[] = [];
  const shadowed: DescriptorStatus[] = [];
  const shadowRules = shadowRulesOf(ruleSet);
  for (const [i, response] of responses.entries()) {
    for (const status of response.statuses) {
      if (status.decision === undefined || status.currentLimit === undefined) continue;
      // A shadow-mode rule is reported (when it would have rejected), never enforced nor described:
      // clients see nothing of a limit that is not in force yet.
      if (status.shadow === true || (status.ruleId !== undefined && shadowRules.has(status.ruleId))) {
        if (status.shadow === true) shadowed.push(status);
        continue;
      }
      const name = status.ruleName ?? status.currentLimit.name ?? status.ruleId ?? domains[i]?.domain ?? 'rules';
      applied.push({ status, name });
    }
  }
  if (applied.length === 0) return shadowed.length === 0 ? undefined : { ...SHADOW_ONLY, shadowed };
  return combined(applied, shadowed);
}

/**
 * `decide`'s answer, its error as a rejection: when an earlier domain's answer is a promise, `Promise.all` then
 * still waits for it, and no rejection of it goes unhandled.
 */
function settle(decide: Decide, request: RateLimitRequest): MaybePromise<RateLimitResponse> {
  try {
    return decide(request);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The verdict of the enforced rules: the binding one decides and is described. */
function combined(applied: readonly Applied[], shadowed: DescriptorStatus[]): HttpRulesVerdict {
  const decisions = applied.map((a) => a.status.decision as NonNullable<DescriptorStatus['decision']>);
  const chosen = combineDecisions(decisions);
  const bound = applied[decisions.indexOf(chosen)] ?? (applied[0] as Applied);
  const results: LimitResult[] = applied.map(({ status, name }, i) => ({
    name,
    key: status.ruleId ?? name,
    decision: decisions[i] as NonNullable<DescriptorStatus['decision']>,
  }));
  return {
    decision: decisionWithResults(chosen, results),
    limitName: bound.name,
    limit: bound.status.currentLimit,
    shadowed,
  };
}

/** The verdict when only shadow-mode rules applied: nothing to enforce or describe, something to report. */
const SHADOW_ONLY: HttpRulesVerdict = {
  decision: {
    allowed: true,
    limit: Number.POSITIVE_INFINITY,
    remaining: Number.POSITIVE_INFINITY,
    resetMs: 0,
    retryAfterMs: 0,
  },
  limitName: '',
  limit: undefined,
  shadowed: [],
};

const shadowCache = new WeakMap<RuleSet, ReadonlySet<string>>();

/** The ids of a rule set's shadow-mode rules (computed once per rule set: rules reload by swapping it). */
function shadowRulesOf(ruleSet: RuleSet): ReadonlySet<string> {
  let ids = shadowCache.get(ruleSet);
  if (ids === undefined) {
    const found = new Set<string>();
    const walk = (level: DescriptorLevel) => {
      for (const node of level.all) {
        if (node.shadow) found.add(node.id);
        walk(node.children);
      }
    };
    for (const domain of ruleSet.domains.values()) walk(domain.root);
    ids = found;
    shadowCache.set(ruleSet, ids);
  }
  return ids;
}
