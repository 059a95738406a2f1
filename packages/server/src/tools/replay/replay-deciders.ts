/**
 * The deciders of a replay, each with counters of its own on a virtual clock: the rules engine over a memory store
 * for descriptor records (its synchronous decide), and the memory store itself for `/v1/check` records, each
 * under the policy it was sent with, resolved by the service's own `/v1/check` reader.
 */
import { createManualClock, createMemoryStore, type MemoryStore, type ResolvedPolicy } from 'sluice';
import { createRulesEngine, type DescriptorStatus, type RuleSet } from 'sluice/rules';
import { CHECK_KEY_PREFIX } from '../../protocols/http/check-fallback.js';
import { createCheckParser } from '../../protocols/http/check-parse.js';
import type { ReplayKey } from './replay-keys.js';
import { type DirectPlan, decideDirect, directPlan, nodesById, watchStore } from './rules-direct.js';

/** One decision of a replay. Deciders reuse one object: read it before the next decision. */
export interface ReplayDecision {
  rejected: boolean;
  /** The rule that decided (the first over its limit, else the first with a limit); undefined when none applied. */
  rule: string | undefined;
  /** Per descriptor, the engine's status (undefined for a check). */
  statuses: readonly DescriptorStatus[] | undefined;
}

/** Decides one request of a replay at `t` (ms; the clock never goes back). Throws when it cannot be decided. */
export type ReplayDecide = (key: ReplayKey, t: number, cost: number) => ReplayDecision;

/** The most keys a memory store takes (its own upper bound): more than a replay can hold in memory anyway. */
const UNBOUNDED_KEYS = 2 ** 30;

/**
 * A memory store for a replay. Replay promises the outcomes exactly, and an evicted counter starts afresh
 * (admitting too much), so by default nothing bounds it but the process's memory: no key or byte bound.
 * `maxKeys` is for tests; the replay reports any eviction. No sweep: its timer runs on real time, and the
 * replay's clock is the capture's.
 */
export function createReplayStore(maxKeys = UNBOUNDED_KEYS): MemoryStore {
  return createMemoryStore({ sweepIntervalMs: 0, maxKeys, maxBytes: Number.MAX_SAFE_INTEGER });
}

/** A decider for descriptor records under `ruleSet`: the engine, and its short cut for plain rules (rules-direct.ts). */
export function createRulesDecider(ruleSet: RuleSet, memory: MemoryStore = createReplayStore()): ReplayDecide {
  const clock = createManualClock(0);
  const watched = watchStore(memory);
  const engine = createRulesEngine({ ruleSet, store: watched.store, clock });
  const decideNow = engine.decide?.bind(engine);
  if (decideNow === undefined) throw new Error('the rules engine has no synchronous decide');
  const nodes = nodesById(ruleSet);
  // Per request: its short cut, or null once the engine must decide it every time.
  const plans = new WeakMap<ReplayKey, DirectPlan | null>();
  const out: ReplayDecision = { rejected: false, rule: undefined, statuses: undefined };
  return (key, t, cost) => {
    // A capture from several processes may go back a little in time; the clock never does.
    if (t > clock.now()) clock.set(t);
    const plan = plans.get(key);
    if (plan) {
      const rejected = decideDirect(memory, plan, cost, clock.now());
      if (rejected !== undefined) {
        out.rejected = rejected;
        out.rule = plan.rule;
        out.statuses = plan.statuses;
        return out;
      }
    }
    watched.calls.length = 0;
    const descriptors = key.descriptors ?? [];
    const response = decideNow({ domain: key.domain, descriptors, hitsAddend: cost });
    if (response instanceof Promise) throw new Error('the memory store answered with a promise');
    const statuses = response.statuses;
    if (plan === undefined) plans.set(key, directPlan(nodes, descriptors.length, statuses, watched.calls) ?? null);
    let deciding: DescriptorStatus | undefined;
    for (const s of statuses) if (s.code === 'OVER_LIMIT') deciding ??= s;
    if (deciding === undefined) for (const s of statuses) if (s.currentLimit) deciding ??= s;
    out.rejected = response.overallCode === 'OVER_LIMIT';
    out.rule = deciding === undefined ? undefined : (deciding.ruleName ?? deciding.ruleId);
    out.statuses = statuses;
    return out;
  };
}

/** The rule name `/v1/check` records are reported under: their policy's id (`name~` first when named). */
export const checkRuleName = (policy: ResolvedPolicy) => `check ${policy.id}`;

/** A decider for `/v1/check` records: each under the policy it was sent with, as the service decided it. */
export function createCheckDecider(store: MemoryStore = createReplayStore()): ReplayDecide {
  // clientClock: the item's time is the record's; policies resolved once per key (kept on a WeakMap).
  const parse = createCheckParser({ maxPolicies: 10_000, clientClock: true });
  const policies = new WeakMap<ReplayKey, ResolvedPolicy>();
  const out: ReplayDecision = { rejected: false, rule: undefined, statuses: undefined };
  let now = 0;
  return (key, t, cost) => {
    const check = key.check;
    if (check === undefined) throw new Error('not a /v1/check record');
    let policy = policies.get(key);
    if (policy === undefined) {
      // Throws the service's own coded error for a policy it would not have accepted.
      policy = parse({ ...check }, 0, t).policy as ResolvedPolicy;
      policies.set(key, policy);
    }
    if (t > now) now = t;
    const decision = store.check(CHECK_KEY_PREFIX + check.key, policy, cost, now, true);
    if (decision instanceof Promise) throw new Error('the memory store answered with a promise');
    out.rejected = !decision.allowed;
    out.rule = checkRuleName(policy);
    out.statuses = undefined;
    return out;
  };
}
