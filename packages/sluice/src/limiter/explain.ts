/**
 * `limiter.explain(key)`: every limit's counter as it stands, which one binds and when it resets — a look
 * that takes nothing, answering what the next check of the same cost would decide.
 */

import type { Decision, RejectReason } from '../core/decision.js';
import type { AlgorithmName } from '../core/policy.js';
import type { MaybePromise, Store, StoreItem } from '../stores/store.js';
import { binds } from './combine.js';
import { type FailurePolicy, isStoreFailure } from './failure-policy.js';

/** One limit's state, as `explain` reports it. */
export interface LimitExplanation {
  readonly name: string;
  /** The key this limit counts (a limit the key object leaves out is not listed). */
  readonly key: string;
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly periodMs: number;
  /** What the counter can hold: the burst of a bucket algorithm, else the limit. */
  readonly capacity: number;
  /** Units counted now: `capacity - remaining`. */
  readonly used: number;
  /** Unit-cost requests that would pass now. */
  readonly remaining: number;
  /** Whether a request of the explained cost would pass this limit. */
  readonly allowed: boolean;
  /** Milliseconds until the counter is back to full capacity. */
  readonly resetMs: number;
  /** When that is, on the limiter's clock. */
  readonly resetAt: number;
  /** Milliseconds until the request would pass (0 now, `Infinity` never). */
  readonly retryAfterMs: number;
  /** Why it would be refused, when not simply full: `'blocked'`, `'cost-exceeds-capacity'`, … */
  readonly reason?: RejectReason;
  /** True for the limit that decides (the rejection that holds longest, else the closest to exhaustion). */
  readonly binding: boolean;
}

/** What `limiter.explain(key)` answers. */
export interface LimiterExplanation {
  /** The limiter's clock when it looked. */
  readonly atMs: number;
  /** The cost explained. */
  readonly cost: number;
  /** Whether the next check of this cost would pass. */
  readonly allowed: boolean;
  /** The name of the binding limit; undefined when no limit applies to the key. */
  readonly binding: string | undefined;
  /** Every limit that applies, in the limiter's order. */
  readonly limits: readonly LimitExplanation[];
  /** True when the store could not be read and the failure policy answered (the counters are its own). */
  readonly degraded: boolean;
}

/** Builds an explanation from each applied limit's look at the store. */
function explanation(
  items: readonly (StoreItem & { name: string })[],
  decisions: readonly Decision[],
  atMs: number,
  cost: number,
): LimiterExplanation {
  let bound = -1;
  decisions.forEach((d, i) => {
    if (bound < 0 || binds(d, decisions[bound] as Decision)) bound = i;
  });
  const limits = items.map((item, i): LimitExplanation => {
    const d = decisions[i] as Decision;
    const { policy } = item;
    const entry = {
      name: item.name,
      key: item.key,
      algorithm: policy.algorithm,
      limit: policy.limit,
      periodMs: policy.periodMs,
      capacity: policy.capacity,
      used: Math.max(0, policy.capacity - d.remaining),
      remaining: d.remaining,
      allowed: d.allowed,
      resetMs: d.resetMs,
      resetAt: atMs + d.resetMs,
      retryAfterMs: d.retryAfterMs,
      binding: i === bound,
    };
    return d.reason === undefined ? entry : { ...entry, reason: d.reason };
  });
  const binding = bound < 0 ? undefined : items[bound]?.name;
  const degraded = decisions.some((d) => d.degraded === true);
  return { atMs, cost, allowed: decisions.every((d) => d.allowed), binding, limits, degraded };
}

/**
 * Looks at every applied limit without taking anything (the store's check with `commit: false`, all
 * limits in one call), falling back to the failure policy's own look when the store fails.
 */
export function explainItems(
  store: Store,
  failure: FailurePolicy,
  items: readonly (StoreItem & { name: string })[],
  nowMs: number,
  cost: number,
): MaybePromise<LimiterExplanation> {
  const fallback = () => explanation(items, failure.decide(items, nowMs, false), nowMs, cost);
  let looked: MaybePromise<Decision[]>;
  try {
    looked = store.checkMany(items, nowMs, false);
  } catch (error) {
    if (isStoreFailure(error)) return fallback();
    throw error;
  }
  if (!(looked instanceof Promise)) return explanation(items, looked, nowMs, cost);
  return looked.then(
    (ds) => explanation(items, ds, nowMs, cost),
    (error: unknown) => {
      if (isStoreFailure(error)) return fallback();
      throw error;
    },
  );
}
