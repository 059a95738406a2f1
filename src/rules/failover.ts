import type { Decision } from '../core/decision.js';
import { isSluiceError } from '../core/errors.js';
import { createMemoryStore, type MemoryStore } from '../stores/memory/memory-store.js';
import type { MaybePromise, Store, StoreItem } from '../stores/store.js';
import type { FailMode } from './types.js';

/** A store item with the failure policy of the rule it came from. */
export interface FailItem extends StoreItem {
  readonly fail: FailMode | undefined;
}

/** How long a fail-closed rejection tells the client to wait: the store may be back by then. */
const CLOSED_RETRY_MS = 1000;

/**
 * Checks items on the store, all or nothing, and applies each rule's failure policy when the store
 * fails: `open` allows, `closed` rejects, `insurance` counts in an in-process memory store with the same
 * policy until the store is back. Every such decision is marked `degraded`. When a failing item has no
 * policy, the store's error is thrown.
 */
export function createFailover(store: Store, fallback: FailMode | undefined) {
  let insurance: MemoryStore | undefined;

  function degrade(items: readonly FailItem[], nowMs: number, commit: boolean, error: unknown): Decision[] {
    const modes = items.map((item) => item.fail ?? fallback);
    if (modes.some((m) => m === undefined)) throw error;
    const decisions: (Decision | undefined)[] = items.map((item, i) => {
      const p = item.policy;
      if (modes[i] === 'open') {
        return { allowed: true, limit: p.limit, remaining: p.limit, resetMs: 0, retryAfterMs: 0, degraded: true };
      }
      if (modes[i] === 'closed') {
        return {
          allowed: false,
          limit: p.limit,
          remaining: 0,
          resetMs: 0,
          retryAfterMs: CLOSED_RETRY_MS,
          reason: 'store-unavailable',
          degraded: true,
        };
      }
      return undefined;
    });
    const insured = items.filter((_, i) => modes[i] === 'insurance');
    if (insured.length > 0) {
      insurance ??= createMemoryStore({ maxKeys: 100_000 });
      // Take from the insurance counters only when no fail-closed limit already rejects the request.
      const take = commit && decisions.every((d) => d === undefined || d.allowed);
      const results = insurance.checkMany(insured, nowMs, take);
      let next = 0;
      for (const [i, mode] of modes.entries()) {
        if (mode === 'insurance') decisions[i] = { ...(results[next++] as Decision), degraded: true };
      }
    }
    return decisions as Decision[];
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
    async close(): Promise<void> {
      await insurance?.close();
    },
  };
}

/** True for a store that is down or too slow (not for misuse such as a closed store). */
function isStoreFailure(error: unknown): boolean {
  if (!isSluiceError(error)) return true;
  return error.code === 'ERR_SLUICE_STORE_UNAVAILABLE' || error.code === 'ERR_SLUICE_STORE_TIMEOUT';
}
