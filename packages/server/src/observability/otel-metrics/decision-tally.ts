/** Decisions counted per (domain, rule, outcome) from the moment the service starts, bounded, for OpenTelemetry's observable counter to read. */

import type { DecisionEvent, DecisionOutcome } from '../decision-events.js';
import { ADHOC_RULE, MAX_DECISION_SERIES, OVERFLOW_LABEL } from '../decision-metrics.js';

/** One series and its count. */
export interface TallyRow {
  readonly domain: string;
  readonly rule: string;
  readonly outcome: DecisionOutcome;
  count: number;
}

/** Counts of every series; `count` is the hub listener (a lookup and an increment per decision). */
export interface DecisionTally {
  count(event: DecisionEvent): void;
  rows(): Iterable<TallyRow>;
}

/** Creates a tally holding at most `maxSeries` series; later ones count under the overflow label, as sluice_decisions_total. */
export function createDecisionTally(maxSeries: number = MAX_DECISION_SERIES): DecisionTally {
  const byDomain = new Map<string, Map<string, Map<DecisionOutcome, TallyRow>>>();
  const all: TallyRow[] = [];
  const find = (domain: string, rule: string, outcome: DecisionOutcome): TallyRow => {
    let byRule = byDomain.get(domain);
    let byOutcome = byRule?.get(rule);
    let row = byOutcome?.get(outcome);
    if (row !== undefined) return row;
    if (all.length >= maxSeries && domain !== OVERFLOW_LABEL) return find(OVERFLOW_LABEL, OVERFLOW_LABEL, outcome);
    if (byRule === undefined) {
      byRule = new Map();
      byDomain.set(domain, byRule);
    }
    if (byOutcome === undefined) {
      byOutcome = new Map();
      byRule.set(rule, byOutcome);
    }
    row = { domain, rule, outcome, count: 0 };
    byOutcome.set(outcome, row);
    all.push(row);
    return row;
  };
  return {
    count(event) {
      if (event.list !== undefined) return;
      // /v1/check policies are chosen by callers: one label for all, as in Prometheus.
      find(event.domain, event.domain === '' ? ADHOC_RULE : event.rule, event.outcome).count++;
    },
    rows: () => all,
  };
}
