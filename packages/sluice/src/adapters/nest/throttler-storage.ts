/**
 * A storage for `@nestjs/throttler` backed by a sluice store: `ThrottlerModule.forRoot({ throttlers,
 * storage: createThrottlerStorage({ store }) })` switches its counting, unchanged guard and decorators,
 * to sluice — atomic on Redis across instances, a sliding window, bounded memory — and the app can move
 * to `RateLimitGuard` later. Structural: nothing is imported from @nestjs/throttler.
 */

import type { Clock } from '../../core/clock.js';
import { systemClock } from '../../core/clock.js';
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { AlgorithmName, ResolvedPolicy } from '../../core/policy.js';
import { resolvePolicy } from '../../core/policy.js';
import { createFailurePolicy, type FailMode, isStoreFailure } from '../../limiter/failure-policy.js';
import { createMemoryStore } from '../../stores/memory/memory-store.js';
import type { Store } from '../../stores/store.js';

/** What @nestjs/throttler's guard reads back from its storage (`ThrottlerStorageRecord`). */
export interface ThrottlerStorageRecord {
  totalHits: number;
  /** Seconds until the window is back to full. */
  timeToExpire: number;
  isBlocked: boolean;
  /** Seconds until the request would pass (the guard sends it as `Retry-After`). */
  timeToBlockExpire: number;
}

/** @nestjs/throttler's `ThrottlerStorage`, structurally. */
export interface ThrottlerStorageLike {
  increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord>;
}

/** Options of {@link createThrottlerStorage}. */
export interface ThrottlerStorageOptions {
  /** Where counters live (`createRedisStore(...)`, `createRemoteStore(...)`). @default a new memory store */
  store?: Store;
  /**
   * How hits are counted within each throttler's `ttl`. The default approximates throttler's own
   * per-hit expiry with constant memory per key. @default 'sliding-window'
   */
  algorithm?: AlgorithmName;
  /** When the store fails: allow, reject, or count in memory meanwhile (as a limiter's `fail`). @default 'open' */
  fail?: FailMode;
  /** @default the system clock */
  clock?: Clock;
}

/**
 * Creates a `ThrottlerStorage` for @nestjs/throttler. A rejected hit is not counted (throttler's own
 * storage counts it), so a client hammering a limit does not extend its own lockout.
 *
 * @example
 * ThrottlerModule.forRoot({
 *   throttlers: [{ ttl: 60_000, limit: 100 }],
 *   storage: createThrottlerStorage({ store: createRedisStore({ client: new Redis() }) }),
 * })
 */
export function createThrottlerStorage(options: ThrottlerStorageOptions = {}): ThrottlerStorageLike {
  const store = options.store ?? createMemoryStore();
  const algorithm = options.algorithm ?? 'sliding-window';
  const clock = options.clock ?? systemClock;
  const failure = createFailurePolicy({ fail: options.fail ?? 'open' });
  const policies = new Map<string, ResolvedPolicy>();

  function policyFor(ttl: number, limit: number, blockDuration: number, name: string): ResolvedPolicy {
    const cacheKey = `${name}\u0000${ttl}\u0000${limit}\u0000${blockDuration}`;
    let policy = policies.get(cacheKey);
    if (policy === undefined) {
      const resolved = resolvePolicy({
        algorithm,
        limit,
        period: ttl,
        // throttler blocks for blockDuration after going over; when it equals ttl, the window does that.
        ...(blockDuration > 0 && blockDuration !== ttl ? { blockDuration } : {}),
      });
      policy = { ...resolved, id: `throttler~${name}~${resolved.id}` };
      if (policies.size >= 1000) policies.delete(policies.keys().next().value as string);
      policies.set(cacheKey, policy);
    }
    return policy;
  }

  return {
    async increment(key, ttl, limit, blockDuration, throttlerName) {
      if (typeof key !== 'string' || !(ttl > 0) || !(limit >= 0)) {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `throttler storage: bad arguments (ttl ${ttl}, limit ${limit})`,
        );
      }
      const policy = policyFor(Math.ceil(ttl), Math.floor(limit), Math.ceil(blockDuration || 0), throttlerName);
      const nowMs = clock.now();
      let d: Decision;
      try {
        d = await store.check(key, policy, 1, nowMs, true);
      } catch (error) {
        if (!isStoreFailure(error)) throw error;
        d = failure.decide([{ key, policy, cost: 1 }], nowMs, true)[0] as Decision;
      }
      return {
        totalHits: d.allowed ? policy.limit - d.remaining : policy.limit + 1,
        timeToExpire: Math.ceil(d.resetMs / 1000),
        isBlocked: !d.allowed,
        timeToBlockExpire: d.allowed ? 0 : Math.max(1, Math.ceil(Math.min(d.retryAfterMs, 2 ** 31) / 1000)),
      };
    },
  };
}
