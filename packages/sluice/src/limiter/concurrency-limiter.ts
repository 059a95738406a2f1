import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { type Duration, parseDuration } from '../core/duration.js';
import { SluiceError } from '../core/errors.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Lease, LeaseDecision, Store } from '../stores/store.js';
import { settle } from './create-limiter.js';

/** Options of `createConcurrencyLimiter`. */
export interface ConcurrencyLimiterOptions {
  /** Most requests in flight per key at once. */
  limit: number;
  /** How long a lease lasts unless released, so a crashed holder cannot leak a place. @default '1m' */
  lease?: Duration;
  store?: Store;
  clock?: Clock;
}

/** Limits requests in flight rather than requests per period (Stripe's concurrent-requests limiter). */
export interface ConcurrencyLimiter {
  /** Takes a place for `key`; when allowed, the decision carries the lease to release. */
  acquire(key: string): Promise<LeaseDecision>;
  /** Gives a place back; false when the lease had already lapsed or was released. */
  release(lease: Lease): Promise<boolean>;
}

/**
 * Creates a concurrency limiter.
 * @example
 * const inFlight = createConcurrencyLimiter({ limit: 5, lease: '30s' });
 * const d = await inFlight.acquire(userId);
 * if (d.lease) try { await work(); } finally { await inFlight.release(d.lease); }
 */
export function createConcurrencyLimiter(options: ConcurrencyLimiterOptions): ConcurrencyLimiter {
  const { limit } = options;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > 1_000_000) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_LIMIT',
      `limit: ${String(limit)} is not a whole number between 0 and 1e6`,
      {
        option: 'limit',
      },
    );
  }
  const leaseMs = parseDuration(options.lease ?? 60_000, 'lease');
  if (leaseMs < 1) {
    throw new SluiceError('ERR_SLUICE_INVALID_DURATION', 'lease: must be at least 1 ms', { option: 'lease' });
  }
  const store = options.store ?? createMemoryStore();
  const clock = options.clock ?? systemClock;
  return {
    acquire(key) {
      return settle(() => {
        if (typeof key !== 'string')
          throw new SluiceError('ERR_SLUICE_INVALID_KEY', `key: expected a string, got ${typeof key}`);
        return store.acquire(key, limit, leaseMs, clock.now());
      });
    },
    release: (lease) => settle(() => store.release(lease, clock.now())),
  };
}
