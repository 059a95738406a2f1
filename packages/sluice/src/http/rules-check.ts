/**
 * The middleware with rules instead of inline limits: a request becomes descriptors through the rules' `http:` section,
 * the rules engine decides them, and the answers are combined as inline limits' are.
 */
import type { Decision } from '../core/decision.js';
import { combineDecisions, decisionWithResults } from '../limiter/combine.js';
import type { LimiterDecision, LimitResult } from '../limiter/create-limiter.js';
import type { CurrentLimit, DescriptorStatus, RulesEngine } from '../rules/engine-types.js';
import { httpDescriptorsFor } from '../rules/http/descriptors-for.js';
import type { HttpHeaders } from '../rules/http/types.js';
import type { DescriptorLevel, RuleSet } from '../rules/types.js';
import { type LimitHeaderInfo, limitHeaderInfo } from './headers.js';

/** What the rules said about a request: the combined decision and the limit the headers describe. */
export interface RulesVerdict {
  readonly decision: LimiterDecision;
  readonly limitName: string;
  readonly header: LimitHeaderInfo;
  /** Statuses a shadow-mode rule would have rejected (the request passes anyway). */
  readonly shadowed: readonly DescriptorStatus[];
}

/** The request facts the rules' `http:` section reads. */
export interface RulesRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: HttpHeaders;
  /** The client address, trusted proxies already applied. */
  readonly ip: string;
  readonly cost: number;
}

/**
 * Checks a request against a rules engine: the `http:` section of each domain turns the request into
 * descriptors (Envoy's route actions), the engine decides them, and the answers are combined as for
 * inline limits — rejected if any rule rejected, headers from the rule closest to exhaustion.
 * Domains are decided one after another's promise, each atomically; shadow-mode rules never reject.
 */
export function createRulesCheck(engine: RulesEngine): (request: RulesRequest) => Promise<RulesVerdict | undefined> {
  // Header facts per rule, built once per distinct (name, limit, period).
  const headerCache = new Map<string, LimitHeaderInfo>();
  const headerOf = (name: string, current: CurrentLimit): LimitHeaderInfo => {
    const { limit, periodMs, algorithm } = current;
    const id = `${name}\n${limit}\n${periodMs}\n${algorithm}\n${current.burst ?? ''}`;
    let info = headerCache.get(id);
    if (info === undefined) {
      // The algorithm and the bucket's capacity make q, r and t those of the policy, as for inline limits.
      info = limitHeaderInfo(printable(name), periodMs, limit, 'name', { algorithm, capacity: current.burst ?? limit });
      if (headerCache.size >= 1000) headerCache.clear();
      headerCache.set(id, info);
    }
    return info;
  };

  return async (request) => {
    const domains = httpDescriptorsFor(engine.ruleSet, {
      method: request.method,
      path: request.url,
      headers: request.headers,
      remoteAddress: request.ip,
    });
    if (domains.length === 0) return undefined;
    const responses = await Promise.all(
      domains.map((d) =>
        engine.shouldRateLimit({
          domain: d.domain,
          descriptors: d.descriptors,
          ...(request.cost === 1 ? {} : { hitsAddend: request.cost }),
        }),
      ),
    );
    const applied: { status: DescriptorStatus; decision: Decision; name: string }[] = [];
    const shadowed: DescriptorStatus[] = [];
    const shadowRules = shadowRulesOf(engine.ruleSet);
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
        applied.push({ status, decision: status.decision, name });
      }
    }
    if (applied.length === 0) return shadowed.length === 0 ? undefined : { ...PASSING, shadowed };
    const decisions = applied.map((a) => a.decision);
    const chosen = combineDecisions(decisions);
    const bound = applied[decisions.indexOf(chosen)] ?? (applied[0] as (typeof applied)[number]);
    const limit = bound.status.currentLimit as NonNullable<DescriptorStatus['currentLimit']>;
    const results: LimitResult[] = applied.map((a) => ({
      name: a.name,
      key: a.status.ruleId ?? a.name,
      decision: a.decision,
    }));
    return {
      decision: decisionWithResults(chosen, results),
      limitName: bound.name,
      header: headerOf(bound.name, limit),
      shadowed,
    };
  };
}

/** The answer when only shadow rules applied: nothing to enforce or describe, something to report. */
const PASSING: RulesVerdict = {
  decision: {
    allowed: true,
    limit: Number.POSITIVE_INFINITY,
    remaining: Number.POSITIVE_INFINITY,
    resetMs: 0,
    retryAfterMs: 0,
  },
  limitName: '',
  header: limitHeaderInfo('', 1000, 0),
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

/** Rule names come from config files: keep what an sf-string can carry. */
function printable(name: string): string {
  let out = '';
  for (const c of name) {
    const code = c.charCodeAt(0);
    out += code >= 0x20 && code <= 0x7e ? c : '?';
  }
  return out;
}
