/**
 * `createConcurrencyLimiter`: a limit on requests in flight per key rather than per period, each place a lease that is
 * given back when the work ends or lapses by itself if its holder crashes.
 */
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { type Duration, parseDuration } from '../core/duration.js';
import { optionError, SluiceError } from '../core/errors.js';
import { createMemoryStore, type MemoryStore } from '../stores/memory/memory-store.js';
import type { Lease, LeaseDecision, Store } from '../stores/store.js';
import {
  closedDecision,
  createFailurePolicy,
  type FailMode,
  type FailureOptions,
  isStoreFailure,
  openDecision,
  shareOf,
} from './failure-policy.js';
import { settle } from './limiter-parts.js';

/** Options of `createConcurrencyLimiter`. */
export interface ConcurrencyLimiterOptions extends FailureOptions {
  /** Most requests in flight per key at once. */
  limit: number;
  /** How long a lease lasts unless released, so a crashed holder cannot leak a place. @default '1m' */
  lease?: Duration;
  store?: Store;
  clock?: Clock;
}

/** Limits requests in flight rather than requests per period (Stripe's concurrent-requests limiter). */
export interface ConcurrencyLimiter {
  /**
   * Takes a place for `key`; when allowed, the decision carries the lease to release. When the store
   * fails, the limiter's failure policy answers (`fail`, as for `createLimiter`), marked `degraded`.
   */
  acquire(key: string): Promise<LeaseDecision>;
  /** Gives a place back; false when the lease had already lapsed or was released (or the store failed). */
  release(lease: Lease): Promise<boolean>;
}

/** Lease ids handed out without the store: `open` leases hold nothing, `insurance` ones a local place. */
const OPEN_LEASE = 'open~';
const INSURED_LEASE = 'insured~';

/** One concurrency limiter: its checked options, its store and what it holds while the store is down. */
interface Concurrency {
  readonly limit: number;
  readonly leaseMs: number;
  readonly mode: FailMode;
  /** The insurance share of the places this process may hand out alone. */
  readonly share: number;
  readonly store: Store;
  readonly clock: Clock;
  openSeq: number;
  /** The places handed out while the store is down (insurance), made on the first failure. */
  insurance: MemoryStore | undefined;
}

/**
 * Creates a concurrency limiter.
 * @example
 * const inFlight = createConcurrencyLimiter({ limit: 5, lease: '30s', fail: 'closed' });
 * const d = await inFlight.acquire(userId);
 * if (d.lease) try { await work(); } finally { await inFlight.release(d.lease); }
 */
export function createConcurrencyLimiter(options: ConcurrencyLimiterOptions): ConcurrencyLimiter {
  const c = resolveConcurrency(options);
  return {
    acquire: (key) => settle(() => acquireNow(c, key)),
    release: (lease) => settle(() => releaseNow(c, lease)),
  };
}

/** Checks the options (limit, lease, and fail and insuranceShare exactly as createLimiter does). */
function resolveConcurrency(options: ConcurrencyLimiterOptions): Concurrency {
  const { limit } = options;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > 1_000_000) {
    throw optionError('limit', `${String(limit)} is not a whole number between 0 and 1e6`, 'ERR_SLUICE_INVALID_LIMIT');
  }
  const leaseMs = parseDuration(options.lease ?? 60_000, 'lease');
  if (leaseMs < 1) {
    throw optionError('lease', 'must be at least 1 ms', 'ERR_SLUICE_INVALID_DURATION');
  }
  const { mode } = createFailurePolicy(options);
  return {
    limit,
    leaseMs,
    mode,
    share: options.insuranceShare ?? 1,
    store: options.store ?? createMemoryStore(),
    clock: options.clock ?? systemClock,
    openSeq: 0,
    insurance: undefined,
  };
}

/** Takes a place for `key` from the store; a store failure is answered by the failure policy. */
function acquireNow(c: Concurrency, key: string): LeaseDecision | Promise<LeaseDecision> {
  if (typeof key !== 'string')
    throw new SluiceError('ERR_SLUICE_INVALID_KEY', `key: expected a string, got ${typeof key}`);
  const nowMs = c.clock.now();
  try {
    const d = c.store.acquire(key, c.limit, c.leaseMs, nowMs);
    return d instanceof Promise ? d.catch((error: unknown) => onFailure(c, error, key, nowMs)) : d;
  } catch (error) {
    return onFailure(c, error, key, nowMs);
  }
}

/** Gives a place back to wherever it came from: nowhere (open), the insurance places, or the store. */
function releaseNow(c: Concurrency, lease: Lease): boolean | Promise<boolean> {
  const nowMs = c.clock.now();
  if (lease.id.startsWith(OPEN_LEASE)) return true;
  if (lease.id.startsWith(INSURED_LEASE)) {
    return c.insurance?.release({ ...lease, id: lease.id.slice(INSURED_LEASE.length) }, nowMs) ?? false;
  }
  // A release the store cannot take is dropped: the lease lapses by itself after leaseMs.
  try {
    const released = c.store.release(lease, nowMs);
    return released instanceof Promise ? released.catch((error: unknown) => dropped(error)) : released;
  } catch (error) {
    return dropped(error);
  }
}

function onFailure(c: Concurrency, error: unknown, key: string, nowMs: number): LeaseDecision {
  if (!isStoreFailure(error)) throw error;
  return degraded(c, key, nowMs);
}

/** The failure policy's answer to an acquire the store could not take. */
function degraded(c: Concurrency, key: string, nowMs: number): LeaseDecision {
  const { limit, leaseMs, mode } = c;
  if (mode === 'open') {
    return { ...openDecision(limit), lease: { key, id: `${OPEN_LEASE}${++c.openSeq}`, expiresAt: nowMs + leaseMs } };
  }
  if (mode === 'closed') return closedDecision(limit, leaseMs);
  // Insurance: this process's share of the places, held in memory until the store is back.
  c.insurance ??= createMemoryStore({ maxKeys: 100_000 });
  const d = c.insurance.acquire(key, shareOf(limit, c.share), leaseMs, nowMs);
  if (d.lease) d.lease = { ...d.lease, id: `${INSURED_LEASE}${d.lease.id}` };
  return { ...d, degraded: true };
}

function dropped(error: unknown): false {
  if (!isStoreFailure(error)) throw error;
  return false;
}
