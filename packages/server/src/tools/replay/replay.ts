/**
 * `sluice replay`'s engine: every captured request decided again under a rule set on a virtual clock (the rules
 * engine over a memory store whose clock is the capture's; `/v1/check` records under their own policies),
 * compared with a baseline — another rule set, or what was decided live — into tallies per rule and per key,
 * the requests that flip, and each rule's observed per-key load for the suggested limits.
 */
import type { MemoryStore } from 'sluice';
import type { RuleSet } from 'sluice/rules';
import type { ReplayRecord } from './capture-record.js';
import { type Recommendation, RuleRecommender } from './recommend.js';
import { createCheckDecider, createReplayStore, createRulesDecider, type ReplayDecide } from './replay-deciders.js';
import { type ReplayKey, ReplayKeys } from './replay-keys.js';
import { count, emptyTally, type ReplayTally, tallyOf } from './replay-tally.js';

export { requestKey } from './replay-keys.js';
export type { ReplayTally } from './replay-tally.js';

/** What a replay found. */
export interface ReplayResult {
  readonly requests: number;
  readonly total: ReplayTally;
  /** By the rule that decided under the candidate (else the baseline's; `(none)` when no rule applied). */
  readonly byRule: ReadonlyMap<string, ReplayTally>;
  /** By the request's descriptors (`domain|key=value,…`), or `check|key` for a `/v1/check` item. */
  readonly byKey: ReadonlyMap<string, ReplayTally>;
  /** How many of the requests were `/v1/check` items (decided under their own policies on both sides). */
  readonly checks: number;
  /**
   * Suggested limits per rule of the candidate (its id, `domain|descriptor path`; `check <policy>` for
   * `/v1/check` policies), from the keys each rule counted.
   */
  readonly recommendations: ReadonlyMap<string, Recommendation>;
  /** The limit names seen under each rule id of `recommendations`. */
  readonly ruleNames: ReadonlyMap<string, ReadonlySet<string>>;
  /**
   * Counters the replay's stores forgot to stay within a key bound (0 unless one was given): each restarted
   * afresh, so the outcomes may admit more than the rules would. Reported loudly when not 0.
   */
  readonly evictions: number;
}

/** Said on stderr, in the text and in the HTML report when counters were forgotten: the outcomes are not exact. */
export const evictionWarning = (evictions: number) =>
  `WARNING: ${evictions} counters were forgotten to stay within the replay's key bound: those keys started afresh, so the candidate admitted more than the rules would`;

/** How one record was decided under each side. */
export interface ReplayStep {
  readonly rejected: boolean;
  readonly baselineRejected: boolean;
  /** The rule that decided under the candidate (else the baseline's; `(none)`). */
  readonly rule: string;
}

/** A replay in progress: feed it records in time order, then read the result. */
export interface ReplayRun {
  /** Decides one record; throws when it cannot be decided (a check's policy the service would refuse). */
  add(record: ReplayRecord): ReplayStep;
  /** The same, for a request already interned in `keys`. */
  addKey(key: ReplayKey, t: number, cost: number, liveRejected: boolean): ReplayStep;
  readonly keys: ReplayKeys;
  result(): ReplayResult;
}

/** Options of {@link startReplay}. */
export interface ReplayOptions {
  /** The window of the suggested limits, in ms. @default 60_000 */
  readonly windowMs?: number;
  /** Most keys each of the replay's stores keeps (tests). @default no bound (2^30, the store's most) */
  readonly maxKeys?: number;
}

/** The suggestions' counters of a replay, and the limit names seen under each rule id. */
class Observer {
  readonly names = new Map<string, Set<string>>();

  constructor(readonly recommender: RuleRecommender) {}

  /** Counts descriptor `i` of `key` under `rule` (the candidate's view: the rule that would count it). */
  add(key: ReplayKey, i: number, rule: string, name: string | undefined, window: number, cost: number): void {
    let counts = key.lastCounts[i];
    if (key.lastRule[i] !== rule || counts === undefined) {
      counts = this.recommender.counts(rule, key.parts[i] as string);
      key.lastRule[i] = rule;
      key.lastCounts[i] = counts;
      let seen = this.names.get(rule);
      if (seen === undefined) {
        seen = new Set();
        this.names.set(rule, seen);
      }
      // A few names at most: a rule's limits, for the report.
      if (name !== undefined && seen.size < 16) seen.add(name);
    }
    counts.add(window, cost);
  }
}

/**
 * Starts a replay under `candidate`, against `baseline` (a rule set replayed alongside, or, when undefined,
 * each record's live outcome). `/v1/check` records name their own policies, which no rule file changes: they
 * are decided once, under those policies, and that decision stands for both sides.
 */
export function startReplay(candidate: RuleSet, baseline?: RuleSet, options: ReplayOptions = {}): ReplayRun {
  const stores: MemoryStore[] = [];
  const newStore = () => {
    const store = createReplayStore(options.maxKeys);
    stores.push(store);
    return store;
  };
  const cand = createRulesDecider(candidate, newStore());
  const base = baseline === undefined ? undefined : createRulesDecider(baseline, newStore());
  let checkDecide: ReplayDecide | undefined;
  const windowMs = options.windowMs ?? 60_000;
  const observer = new Observer(new RuleRecommender(windowMs));
  const keys = new ReplayKeys();
  const total = emptyTally();
  const byRule = new Map<string, ReplayTally>();
  let lastRule: string | undefined;
  let lastRuleTally = emptyTally();
  let requests = 0;
  let checks = 0;
  const addKey = (key: ReplayKey, t: number, cost: number, liveRejected: boolean): ReplayStep => {
    const isCheck = key.check !== undefined;
    if (isCheck) checkDecide ??= createCheckDecider(newStore());
    const decide = isCheck && checkDecide !== undefined ? checkDecide : cand;
    const now = decide(key, t, cost);
    const rejected = now.rejected;
    const nowRule = now.rule;
    const statuses = now.statuses;
    const window = Math.floor(t / windowMs);
    if (statuses === undefined) {
      if (nowRule !== undefined) observer.add(key, 0, nowRule, undefined, window, cost);
    } else {
      for (let i = 0; i < statuses.length; i++) {
        const s = statuses[i];
        if (s?.currentLimit !== undefined && s.ruleId !== undefined) {
          observer.add(key, i, s.ruleId, s.ruleName, window, cost);
        }
      }
    }
    let baselineRejected = liveRejected;
    let rule = nowRule;
    if (isCheck) baselineRejected = base === undefined ? liveRejected : rejected;
    else if (base !== undefined) {
      const before = base(key, t, cost);
      baselineRejected = before.rejected;
      rule ??= before.rule;
    }
    rule ??= '(none)';
    requests++;
    if (isCheck) checks++;
    count(total, rejected, baselineRejected);
    // Most records are decided by the rule of the one before: its tally is at hand.
    if (rule !== lastRule) {
      lastRule = rule;
      lastRuleTally = tallyOf(byRule, rule);
    }
    count(lastRuleTally, rejected, baselineRejected);
    count(key.tally ?? keys.tallyOf(key), rejected, baselineRejected);
    return { rejected, baselineRejected, rule };
  };
  return {
    keys,
    addKey,
    add: (record) => addKey(keys.ofRecord(record), record.t, record.cost, record.outcome === 'OVER_LIMIT'),
    result: () => ({
      requests,
      total,
      byRule,
      byKey: keys.tallies,
      checks,
      recommendations: observer.recommender.result(),
      ruleNames: observer.names,
      evictions: stores.reduce((sum, store) => sum + store.stats().evictions, 0),
    }),
  };
}

/** Replays `records` (in time order; a file's reader or an array) — see {@link startReplay}. */
export async function replay(
  records: AsyncIterable<ReplayRecord> | Iterable<ReplayRecord>,
  candidate: RuleSet,
  baseline?: RuleSet,
  options?: ReplayOptions,
): Promise<ReplayResult> {
  const run = startReplay(candidate, baseline, options);
  // An array is read without an await per record (a microtask each: a third of the time on a million).
  if (Symbol.iterator in records) for (const record of records) run.add(record);
  else for await (const record of records) run.add(record);
  return run.result();
}
