/**
 * `sluice_decisions_total` (by domain, rule and outcome) and `sluice_access_list_hits_total`, counted from
 * the decision hub with bounded series.
 */
import { Counter, type Registry } from 'prom-client';
import type { DecisionEvent, DecisionHub, DecisionOutcome } from './decision-events.js';
import { createTalliedCounter, type Tally } from './metric-tallies.js';

const OUTCOME_INDEX: Readonly<Record<DecisionOutcome, number>> = { ok: 0, near_limit: 1, over_limit: 2, shadow: 3 };

/** The `rule` label of every `/v1/check` decision: its policies are the caller's, not the config's. */
export const ADHOC_RULE = '_adhoc';
/** The `domain` and `rule` labels of decisions past {@link MAX_DECISION_SERIES}. */
export const OVERFLOW_LABEL = '_overflow';
/** Most (domain, rule, outcome) series of `sluice_decisions_total`: 4 outcomes of 2,500 rules. */
export const MAX_DECISION_SERIES = 10_000;

/** Counts every decision of `hub` in `registry`. */
export function countDecisions(registry: Registry, hub: DecisionHub): void {
  const decisions = createTalliedCounter({
    name: 'sluice_decisions_total',
    help: 'Rate-limit decisions, by domain, rule and outcome (ok, near_limit, over_limit, shadow; exclusive).',
    labelNames: ['domain', 'rule', 'outcome'] as const,
    registers: [registry],
  });
  const listHits = new Counter({
    name: 'sluice_access_list_hits_total',
    help: 'Decisions answered by an allow or deny list entry.',
    labelNames: ['list'] as const,
    registers: [registry],
  });
  // The hot path: one tally per (domain, rule, outcome), found through two maps and an array, so no
  // label string is built or hashed per decision. Label values come from the rules: the decider already
  // folds unknown domains into UNKNOWN_DOMAIN, `/v1/check` policies (chosen by callers) fold into
  // ADHOC_RULE here, and past MAX_DECISION_SERIES every new combination counts under OVERFLOW_LABEL, so no
  // client can grow /metrics (nor these maps).
  const byDomain = new Map<string, Map<string, (Tally | undefined)[]>>();
  const overflow: (Tally | undefined)[] = [];
  let decisionSeries = 0;
  const newDecisionSeries = (domain: string, rule: string, outcome: DecisionOutcome): Tally => {
    const i = OUTCOME_INDEX[outcome];
    if (decisionSeries >= MAX_DECISION_SERIES) {
      let tally = overflow[i];
      if (tally === undefined) {
        tally = decisions.tally({ domain: OVERFLOW_LABEL, rule: OVERFLOW_LABEL, outcome });
        overflow[i] = tally;
      }
      return tally;
    }
    let rules = byDomain.get(domain);
    if (rules === undefined) {
      rules = new Map();
      byDomain.set(domain, rules);
    }
    let tallies = rules.get(rule);
    if (tallies === undefined) {
      tallies = [undefined, undefined, undefined, undefined];
      rules.set(rule, tallies);
    }
    const tally = decisions.tally({ domain, rule, outcome });
    tallies[i] = tally;
    decisionSeries++;
    return tally;
  };
  hub.subscribe((event: DecisionEvent) => {
    const rule = event.source === 'check' ? ADHOC_RULE : event.rule;
    const tally = byDomain.get(event.domain)?.get(rule)?.[OUTCOME_INDEX[event.outcome]];
    if (tally !== undefined) tally.n++;
    else newDecisionSeries(event.domain, rule, event.outcome).n++;
    if (event.list !== undefined) listHits.inc({ list: event.list });
  });
}
