/** The dashboard's statistics, fed by the decision hub: per-rule series and the keys nearest their limits, bounded. */
import type { DecisionEvent, DecisionHub, DecisionOutcome } from '../decision-events.js';
import type { OutcomeCounts, RuleSeries } from './rule-series.js';
import { createRuleSeries } from './rule-series.js';
import type { TopKey } from './top-keys.js';
import { createTopKeys } from './top-keys.js';

/** Options of {@link createStatsCollector}. */
export interface StatsCollectorOptions {
  /** Subscribe to this hub at once (`close()` unsubscribes). Without it, feed {@link StatsCollector.record}. */
  hub?: DecisionHub;
  /** The clock the service decides with (ms since the epoch). @default Date.now */
  now?: () => number;
  /** Seconds of per-second history kept per rule. @default 300 */
  windowS?: number;
  /**
   * Most rules with a series of their own; decisions of further rules are counted under the rule
   * `(other)` of their domain, so a config with thousands of rules (or `/v1/check` callers inventing
   * policies) cannot grow memory without bound. @default 256
   */
  maxRules?: number;
  /** Keys kept by the top-keys tracker between prunes (see `createTopKeys`). @default 2048 */
  keyCapacity?: number;
}

/** Where a series' decisions come from. */
export interface SeriesId {
  readonly domain: string;
  /**
   * The rule id (as in `describeRules`), the `/v1/check` policy id, `list:allow` / `list:deny` for
   * decisions an access-list entry answered, `(none)` for descriptors no rule matched, `(other)` past
   * `maxRules`.
   */
  readonly rule: string;
}

/** One rule's decisions per second. */
export interface RuleStats extends SeriesId {
  /** Per-second counts of seconds `fromS..toS`, oldest first. */
  readonly counts: OutcomeCounts;
  /** Sums over the whole window, the current second included. */
  readonly totals: Record<DecisionOutcome, number>;
}

/** Decisions per second per rule. */
export interface StatsSnapshot {
  /**
   * First and last second of the counts (epoch seconds); `toS` is the last complete second. `fromS` is
   * never before the collector started. `toS < fromS` when no second completed since `sinceS`.
   */
  readonly fromS: number;
  readonly toS: number;
  readonly windowS: number;
  /** Rules with decisions in the window, in the order they were first seen. */
  readonly rules: readonly RuleStats[];
  /** Every decision since the collector started (not bounded by the window). */
  readonly total: number;
}

/** The dashboard's in-process statistics: decisions per second per rule, and the most pressed keys. */
export interface StatsCollector {
  /** Counts one decision (what the hub subscription calls). Never throws. */
  record(event: DecisionEvent): void;
  /**
   * Decisions per second per rule for the complete seconds after `sinceS` (epoch seconds; at most the
   * window). Without `sinceS`, the whole window.
   */
  stats(sinceS?: number): StatsSnapshot;
  /** The `n` keys closest to or over their limits now. @default n 20 */
  topKeys(n?: number): TopKey[];
  /** Keys tracked right now (bounded). */
  readonly trackedKeys: number;
  /** Stops listening to the hub. */
  close(): void;
}

const OTHER = '(other)';

/**
 * Creates the collector behind the dashboard's charts and top-keys list. Everything is bounded: a ring
 * of `windowS` seconds per rule, at most `maxRules` rules, and a top-keys tracker that prunes itself.
 * @example
 * const stats = createStatsCollector({ hub: service.hub });
 * setInterval(() => console.log(stats.stats().rules.length, stats.topKeys(5)), 1000);
 */
export function createStatsCollector(options: StatsCollectorOptions = {}): StatsCollector {
  const now = options.now ?? Date.now;
  const windowS = options.windowS ?? 300;
  const maxRules = options.maxRules ?? 256;
  const keys = createTopKeys({ capacity: options.keyCapacity ?? 2048 });
  // domain -> rule -> series; two levels so the hot path builds no composite string.
  const series = new Map<string, Map<string, RuleSeries>>();
  let ruleCount = 0;
  let total = 0;
  // Nothing happened before the collector existed: a young service's charts span its life, not 5 minutes of zeros.
  const startS = Math.floor(now() / 1000);

  function seriesFor(domain: string, rule: string): RuleSeries {
    let rules = series.get(domain);
    if (rules === undefined) {
      rules = new Map();
      series.set(domain, rules);
    }
    let s = rules.get(rule);
    if (s !== undefined) return s;
    if (ruleCount >= maxRules) {
      s = rules.get(OTHER);
      if (s !== undefined) return s;
      rule = OTHER;
    }
    s = createRuleSeries(windowS);
    rules.set(rule, s);
    ruleCount++;
    return s;
  }

  /** Forgets rules idle for a whole window, so reloads and one-off policies do not accumulate. */
  function sweep(nowS: number): void {
    for (const [domain, rules] of series) {
      for (const [rule, s] of rules) {
        if (s.lastS <= nowS - windowS) {
          rules.delete(rule);
          ruleCount--;
        }
      }
      if (rules.size === 0) series.delete(domain);
    }
  }

  function record(event: DecisionEvent): void {
    total++;
    const rule = event.list !== undefined ? `list:${event.list}` : event.rule === '' ? '(none)' : event.rule;
    seriesFor(event.domain, rule).add(event.outcome, event.atMs);
    keys.add(event);
  }

  const unsubscribe = options.hub?.subscribe(record);

  return {
    record,
    stats(sinceS) {
      const nowS = Math.floor(now() / 1000);
      sweep(nowS);
      const toS = nowS - 1;
      const oldest = Math.max(startS, nowS - windowS + 1);
      const fromS = sinceS === undefined ? oldest : Math.min(nowS, Math.max(oldest, Math.floor(sinceS) + 1));
      const rules: RuleStats[] = [];
      for (const [domain, byRule] of series) {
        for (const [rule, s] of byRule) {
          rules.push({ domain, rule, counts: s.read(fromS, toS), totals: s.sum(oldest, nowS) });
        }
      }
      return { fromS, toS, windowS, rules, total };
    },
    topKeys: (n = 20) => keys.top(n, now()),
    get trackedKeys() {
      return keys.size;
    },
    close() {
      unsubscribe?.();
    },
  };
}
