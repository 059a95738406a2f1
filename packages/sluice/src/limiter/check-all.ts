/**
 * `checkAll`: several limiters checked for one request as one atomic step on their shared store, all or nothing, so a
 * rejected request takes from none of them.
 */
import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';
import type { StoreItem } from '../stores/store.js';
import type { CheckOptions, Limiter, LimiterDecision, LimiterKey } from './create-limiter.js';
import { failureOf, keyFor, settle, withFailure, withResults } from './create-limiter.js';
import { decideDegraded, type FailurePolicy } from './failure-policy.js';
import { resolveCost } from './options.js';

/** One limiter's part of a `checkAll`. */
export interface CheckAllItem extends CheckOptions {
  limiter: Limiter;
  key: LimiterKey;
}

/**
 * Checks several limiters for one request, all or nothing: it passes only if every limit passes, and a
 * rejected request takes from none. The limiters must share one store (and clock), which makes the
 * step atomic: one synchronous step in memory, one script on Redis.
 *
 * Result names are `limiterIndex.limitName` unless the limiter has a single limit (`limiterIndex`).
 * @example const d = await checkAll([{ limiter: perIp, key: ip }, { limiter: perUser, key: userId }]);
 */
export function checkAll(items: readonly CheckAllItem[]): Promise<LimiterDecision> {
  return settle(() => {
    const first = items[0];
    if (first === undefined) return withResults([], []);
    const { store, clock } = first.limiter;
    const storeItems: (StoreItem & { name: string })[] = [];
    /** Which limiter's failure policy answers for each item when the store fails. */
    const owners: FailurePolicy[] = [];
    for (const [i, item] of items.entries()) {
      if (item.limiter.store !== store) {
        throw new SluiceError(
          'ERR_SLUICE_STORE_MISMATCH',
          `checkAll: items[${i}] uses another store; all limiters must share one`,
        );
      }
      const cost = resolveCost(item.cost);
      for (const limit of item.limiter.limits) {
        const key = keyFor(item.key, limit.name);
        const name = item.limiter.limits.length === 1 ? `${i}` : `${i}.${limit.name}`;
        if (key !== undefined) {
          storeItems.push({ key, policy: limit.policy, cost, name });
          owners.push(failureOf(item.limiter));
        }
      }
    }
    const nowMs = clock.now();
    return withFailure(
      () => {
        const decisions = store.checkMany(storeItems, nowMs, true);
        return decisions instanceof Promise
          ? decisions.then((ds) => withResults(storeItems, ds))
          : withResults(storeItems, decisions);
      },
      () => withResults(storeItems, degraded(storeItems, owners, nowMs)),
    );
  });
}

/** Each item's degraded decision under its own limiter's failure policy, still all or nothing. */
function degraded(items: readonly StoreItem[], owners: readonly FailurePolicy[], nowMs: number) {
  const parts: { policy: FailurePolicy; items: StoreItem[]; at: number[] }[] = [];
  items.forEach((item, i) => {
    const policy = owners[i] as FailurePolicy;
    let part = parts.find((p) => p.policy === policy);
    if (part === undefined) {
      part = { policy, items: [], at: [] };
      parts.push(part);
    }
    part.items.push(item);
    part.at.push(i);
  });
  const decided = decideDegraded(parts, nowMs, true);
  const out = new Array<Decision>(items.length);
  parts.forEach((part, p) => {
    part.at.forEach((i, j) => {
      out[i] = decided[p]?.[j] as Decision;
    });
  });
  return out;
}
