/**
 * The options of `createLimiter` and their validation: one policy inline or several under `limits`, each named so its
 * counters stay apart, all checked once at construction.
 */
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { optionError, SluiceError } from '../core/errors.js';
import type { PolicyOptions, ResolvedPolicy } from '../core/policy.js';
import { resolvePolicy } from '../core/policy.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Store } from '../stores/store.js';
import { createFailurePolicy, type FailureOptions, type FailurePolicy } from './failure-policy.js';
import type { ReservationOptions } from './reservations.js';

/** One of several limits of a limiter. */
export interface LimitOptions extends PolicyOptions {
  /** Names the limit in results and headers, and keeps its counters apart. @default `limit${index}` */
  name?: string;
}

/** Options of `createLimiter`: one policy inline, or several under `limits`. */
export interface LimiterOptions extends Partial<PolicyOptions>, FailureOptions {
  /** Several limits checked together, all or nothing. Exclusive with an inline `limit`/`period`. */
  limits?: readonly LimitOptions[];
  /** Where counters live. @default a new memory store */
  store?: Store;
  /** Where time comes from (tests inject a manual clock). @default the system clock */
  clock?: Clock;
  /**
   * Namespaces this limiter's counters, so two limiters with the same policy on one store do not share
   * counts. @default none: identical policies on one store share counters
   */
  name?: string;
  /** How long a reservation (`limiter.reserve`) may stay unsettled. @default '10m' */
  reservationTtl?: ReservationOptions['reservationTtl'];
  /** What an unsettled reservation costs once its time is up: all it reserved, or nothing. @default 'charge' */
  onExpire?: ReservationOptions['onExpire'];
  /**
   * Records of pending reservations kept in the store (`createRedisReservationRecords` of `sluice/redis`), so a
   * reservation settles by id from any process and one a crashed process left is still handled by `onExpire`.
   * @default none: reservations live in this process
   */
  reservationStore?: ReservationOptions['reservationStore'];
  /** Reservations held at once; past it the oldest expires early (by `onExpire`). @default 100000 */
  maxOutstanding?: ReservationOptions['maxOutstanding'];
}

/** A limit after validation. */
export interface ResolvedLimit {
  readonly name: string;
  readonly policy: ResolvedPolicy;
}

/** Limiter options after validation. */
export interface ResolvedLimiterOptions {
  readonly limits: readonly ResolvedLimit[];
  readonly store: Store;
  readonly clock: Clock;
  /** What to do when the store fails (`fail`, `insuranceShare`). */
  readonly failure: FailurePolicy;
}

const LIMITER_KEYS = new Set([
  'limits',
  'store',
  'clock',
  'name',
  'fail',
  'insuranceShare',
  'reservationTtl',
  'onExpire',
  'reservationStore',
  'maxOutstanding',
]);
const LIMIT_KEYS = new Set(['name']);

/** Validates limiter options once, at construction; every error names the option at fault. */
export function resolveLimiterOptions(options: LimiterOptions): ResolvedLimiterOptions {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'createLimiter: expected an options object');
  }
  const { limits, store, clock, name } = options;
  const failure = createFailurePolicy(options);
  if (name !== undefined && (typeof name !== 'string' || name === '')) {
    throw optionError('name', 'expected a non-empty string');
  }
  if (store !== undefined && !isStore(store)) {
    throw optionError(
      'store',
      'expected a sluice store (createMemoryStore() or createRedisStore())',
      'ERR_SLUICE_INVALID_STORE',
    );
  }
  if (clock !== undefined && typeof clock?.now !== 'function') {
    throw optionError('clock', 'expected an object with a now() method');
  }
  const scope = name === undefined ? '' : `${name}~`;
  let resolved: ResolvedLimit[];
  if (limits === undefined) {
    // The limiter's own options (the reservation ones are the book's to check) sit beside an inline policy.
    const p = resolvePolicy(options as PolicyOptions, '', LIMITER_KEYS);
    resolved = [{ name: 'default', policy: scope ? { ...p, id: `${scope}${p.id}` } : p }];
  } else {
    resolved = resolveLimits(options, limits, scope);
  }
  return { limits: resolved, store: store ?? createMemoryStore(), clock: clock ?? systemClock, failure };
}

/** The policies under `limits`: none inline beside them, each named once; their counters kept apart by name. */
function resolveLimits(options: LimiterOptions, limits: readonly LimitOptions[], scope: string): ResolvedLimit[] {
  const inline = Object.keys(options).filter((key) => !LIMITER_KEYS.has(key));
  if (inline.length > 0) {
    throw optionError('limits', `give either limits: [...] or an inline policy, not both (found ${inline.join(', ')})`);
  }
  if (!Array.isArray(limits) || limits.length === 0) {
    throw optionError('limits', 'expected a non-empty array of policies');
  }
  const names = new Set<string>();
  return limits.map((limit, i) => {
    const { name = `limit${i}`, ...policy } = limit ?? ({} as LimitOptions);
    if (typeof name !== 'string' || name === '' || names.has(name)) {
      throw optionError(`limits[${i}].name`, 'expected a unique, non-empty string');
    }
    names.add(name);
    const p = resolvePolicy(policy as PolicyOptions, `limits[${i}].`, LIMIT_KEYS);
    return { name, policy: { ...p, id: `${scope}${name}~${p.id}` } };
  });
}

function isStore(value: unknown): value is Store {
  const s = value as Store;
  return typeof s === 'object' && s !== null && typeof s.check === 'function' && typeof s.checkMany === 'function';
}

/** Validates a request's cost. */
export function resolveCost(cost: unknown): number {
  if (cost === undefined) return 1;
  if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 0 || cost > 1_000_000_000) {
    throw optionError('cost', `${String(cost)} is not a whole number between 0 and 1e9`, 'ERR_SLUICE_INVALID_COST');
  }
  return cost;
}
