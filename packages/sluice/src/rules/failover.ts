/**
 * The rules engine's store calls, with each rule's failure policy (`fail: open | closed | insurance`) applied when the
 * store fails, still all or nothing across the request.
 */
import type { Decision } from '../core/decision.js';
import { createFailurePolicy, decideDegraded, type FailurePolicy, isStoreFailure } from '../limiter/failure-policy.js';
import type { MaybePromise, Store, StoreItem } from '../stores/store.js';
import type { FailMode } from './types.js';

/** A store item with the failure policy of the rule it came from. */
export interface FailItem extends StoreItem {
  readonly fail: FailMode | undefined;
}

/**
 * Checks items on the store, all or nothing, and applies each rule's failure policy when the store
 * fails (the limiter's policies: `open` allows, `closed` rejects, `insurance` counts in an in-process
 * memory store, scaled by `insuranceShare`), still all or nothing across the request. Every such
 * decision is marked `degraded`. When a failing item has no policy, the store's error is thrown.
 */
export function createFailover(store: Store, fallback: FailMode | undefined, insuranceShare?: number) {
  const policies = new Map<FailMode, FailurePolicy>();
  const policyOf = (mode: FailMode): FailurePolicy => {
    let policy = policies.get(mode);
    if (policy === undefined) {
      policy = createFailurePolicy(
        mode === 'insurance' && insuranceShare !== undefined ? { fail: mode, insuranceShare } : { fail: mode },
      );
      policies.set(mode, policy);
    }
    return policy;
  };
  // Fail at construction on a bad option, not at the first outage.
  if (fallback !== undefined) policyOf(fallback);
  if (insuranceShare !== undefined) policyOf('insurance');

  function degrade(items: readonly FailItem[], nowMs: number, commit: boolean, error: unknown): Decision[] {
    const modes = items.map((item) => item.fail ?? fallback);
    if (modes.some((m) => m === undefined)) throw error;
    const groups = new Map<FailMode, number[]>();
    for (const [i, mode] of modes.entries()) {
      const group = groups.get(mode as FailMode);
      if (group) group.push(i);
      else groups.set(mode as FailMode, [i]);
    }
    const order = [...groups.entries()];
    const results = decideDegraded(
      order.map(([mode, indices]) => ({ policy: policyOf(mode), items: indices.map((i) => items[i] as FailItem) })),
      nowMs,
      commit,
    );
    const decisions: Decision[] = new Array(items.length);
    for (const [g, [, indices]] of order.entries()) {
      for (const [j, i] of indices.entries()) decisions[i] = results[g]?.[j] as Decision;
    }
    return decisions;
  }

  return {
    check(items: readonly FailItem[], nowMs: number, commit: boolean): MaybePromise<Decision[]> {
      if (items.length === 0) return [];
      let result: MaybePromise<Decision[]>;
      try {
        result = store.checkMany(items, nowMs, commit);
      } catch (error) {
        if (!isStoreFailure(error)) throw error;
        return degrade(items, nowMs, commit, error);
      }
      if (!(result instanceof Promise)) return result;
      return result.catch((error: unknown) => {
        if (!isStoreFailure(error)) throw error;
        return degrade(items, nowMs, commit, error);
      });
    },
  };
}
