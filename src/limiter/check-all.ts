import { SluiceError } from '../core/errors.js';
import type { StoreItem } from '../stores/store.js';
import type { CheckOptions, Limiter, LimiterDecision, LimiterKey } from './create-limiter.js';
import { keyFor, settle, withResults } from './create-limiter.js';
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
        if (key !== undefined) storeItems.push({ key, policy: limit.policy, cost, name });
      }
    }
    const decisions = store.checkMany(storeItems, clock.now(), true);
    return decisions instanceof Promise
      ? decisions.then((ds) => withResults(storeItems, ds))
      : withResults(storeItems, decisions);
  });
}
