/**
 * How a limiter runs a check or a peek: the one-limit paths (with no promise on a synchronous store, and the Redis
 * store's own fallback) and the several-limits path, all or nothing, each answered by the failure policy when the
 * store fails.
 */
import type { Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { type CheckWithFallback, type MaybePromise, type Store, takesFallback } from '../stores/store.js';
import { type FailurePolicy, isStoreFailure } from './failure-policy.js';
import type { LimiterDecision } from './limiter-decision.js';
import type { LimiterKey } from './limiter-key.js';
import { itemsFor, singleKey, withFailure, withResults } from './limiter-parts.js';
import { type ResolvedLimit, resolveCost } from './options.js';

/** Per-check options. */
export interface CheckOptions {
  /** Units this request takes (integer ≥ 0; 0 looks without taking). @default 1 */
  cost?: number;
}

/** A limiter's check paths. */
export interface LimiterRun {
  /** One limit on a synchronous store: the hot path of `checkSync` and `await check()`. */
  readonly oneSync: boolean;
  runOne(key: LimiterKey, options: CheckOptions | undefined, commit: boolean): Decision;
  run(key: LimiterKey, options: CheckOptions | undefined, commit: boolean): MaybePromise<LimiterDecision>;
}

/** The check paths of a limiter over `limits` (`multi`: declared under `limits`, so results name each). */
export function createLimiterRun(
  limits: readonly ResolvedLimit[],
  store: Store,
  clock: Clock,
  failure: FailurePolicy,
  multi: boolean,
): LimiterRun {
  const single = limits[0] as ResolvedLimit;
  const { policy } = single;
  const oneSync = !multi && store.synchronous;
  /** The store's check, when it answers failures with the failure policy itself (stores/store.ts). */
  const checkOrFallBack = !multi && takesFallback(store) ? (store.check as CheckWithFallback) : undefined;

  /** The failure policy's answer for a single-limit check whose store call failed; misuse is rethrown. */
  function failSingle(error: unknown, key: string, cost: number, nowMs: number, commit: boolean): Decision {
    if (!isStoreFailure(error)) throw error;
    return failure.decide([{ key, policy, cost }], nowMs, commit)[0] as Decision;
  }

  /** One limit on a synchronous store (the memory store): only what that case needs — no promise test, no closure. */
  function runOne(key: LimiterKey, options: CheckOptions | undefined, commit: boolean): Decision {
    const cost = options === undefined ? 1 : resolveCost(options.cost);
    const k = typeof key === 'string' ? key : singleKey(key, single.name);
    const nowMs = clock.now();
    try {
      return store.check(k, policy, cost, nowMs, commit) as Decision;
    } catch (error) {
      return failSingle(error, k, cost, nowMs, commit);
    }
  }

  function run(key: LimiterKey, options: CheckOptions | undefined, commit: boolean): MaybePromise<LimiterDecision> {
    if (oneSync) return runOne(key, options, commit);
    const cost = resolveCost(options?.cost);
    const nowMs = clock.now();
    if (!multi) {
      const k = singleKey(key, single.name);
      // The hot path: no closure and, on a synchronous store (memory), no promise either.
      try {
        // Redis: the store's own promise, resolved with the failure policy's answer if it fails.
        if (checkOrFallBack !== undefined)
          return checkOrFallBack.call(store, k, policy, cost, nowMs, commit, failSingle);
        const decision = store.check(k, policy, cost, nowMs, commit);
        return decision instanceof Promise
          ? decision.catch((error: unknown) => failSingle(error, k, cost, nowMs, commit))
          : decision;
      } catch (error) {
        return failSingle(error, k, cost, nowMs, commit);
      }
    }
    const items = itemsFor(limits, key, cost);
    return withFailure(
      () => {
        const decisions = store.checkMany(items, nowMs, commit);
        return decisions instanceof Promise
          ? decisions.then((ds) => withResults(items, ds))
          : withResults(items, decisions);
      },
      () => withResults(items, failure.decide(items, nowMs, commit)),
    );
  }

  return { oneSync, runOne, run };
}
