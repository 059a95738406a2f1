/**
 * Reservations over any limiter: take an estimated cost now, settle the real cost later (give back
 * the difference, or take the extra), with a time-to-live after which an unsettled reservation is
 * charged or refunded. Built on the limiter's check and refund, so every store and every limit of a
 * multi-limit limiter takes part all or nothing.
 */
import type { Clock } from '../core/clock.js';
import { type Duration, parseDuration } from '../core/duration.js';
import { SluiceError } from '../core/errors.js';
import type { ReservationRecords } from '../stores/reservation-records.js';
import { chargeOf, type LimiterCharge } from './charge.js';
import type { LimiterDecision } from './limiter-decision.js';
import type { LimiterKey } from './limiter-key.js';
import { createLocalBook } from './local-book.js';
import { createRecordedBook } from './recorded-book.js';
import type { BookOptions, ReservationAccount, Reservations } from './reservation-types.js';

export type {
  Reservation,
  ReservationAccount,
  Reservations,
  SettleRefusal,
  SettleResult,
} from './reservation-types.js';

/** What reservations need of a limiter: its check and refund, and its clock. */
export interface ReservableLimiter {
  readonly clock: Clock;
  check(key: LimiterKey, options: { cost: number }): Promise<LimiterDecision>;
  /** Gives back `cost` taken at `takenAtMs` (undefined: now); see `Limiter.refund`. */
  refund(key: LimiterKey, options: { cost: number; takenAtMs?: number }): Promise<void>;
  /**
   * Takes `cost` on every limit even past them (debt; limiter/charge.ts), `took` false when it could not (the store
   * failed). Without it a settle's extra is taken by `check`, only as far as it fits.
   */
  charge?: LimiterCharge;
}

/** Options of {@link createReservations}. */
export interface ReservationOptions {
  /** How long a reservation may stay unsettled. @default '10m' */
  reservationTtl?: Duration;
  /** What an unsettled reservation costs once its time is up: all it reserved, or nothing. @default 'charge' */
  onExpire?: 'charge' | 'refund';
  /** Reservations held at once; past it the oldest expires early (by `onExpire`). @default 100000 */
  maxOutstanding?: number;
  /**
   * Records of pending reservations kept in the store (`createRedisReservationRecords` of
   * `sluice/redis`): a reservation a process never settled — it crashed — is charged or refunded by
   * `onExpire` by the next process that sweeps (at most once a second per process, on its calls), and a
   * settle by id works from any process. @default none: reservations live in this process
   */
  reservationStore?: ReservationRecords;
}

const MAX_COST = Number.MAX_SAFE_INTEGER;

/** Checks the options every book shares. */
function resolveOptions(options: ReservationOptions): BookOptions {
  const ttlMs = parseDuration(options.reservationTtl ?? '10m', 'reservationTtl');
  const onExpire = options.onExpire ?? 'charge';
  if (onExpire !== 'charge' && onExpire !== 'refund')
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `onExpire must be 'charge' or 'refund' (got ${String(onExpire)})`,
      { option: 'onExpire' },
    );
  const max = options.maxOutstanding ?? 100_000;
  if (!Number.isInteger(max) || max < 1)
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `maxOutstanding must be a whole number ≥ 1 (got ${String(max)})`,
      { option: 'maxOutstanding' },
    );
  const records = options.reservationStore;
  if (
    records !== undefined &&
    (records === null ||
      typeof records !== 'object' ||
      typeof records.add !== 'function' ||
      typeof records.take !== 'function' ||
      typeof records.takeExpired !== 'function')
  )
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      'reservationStore must be a ReservationRecords (add, take, takeExpired), e.g. createRedisReservationRecords({ client }) of sluice/redis',
      { option: 'reservationStore' },
    );
  return { ttlMs, onExpire, max };
}

/**
 * Reservations on `limiter`. An unsettled reservation lapses after `reservationTtl`: with `'charge'`
 * its whole cost stays taken, with `'refund'` it is given back when the next call (or `sweep()`) sees it.
 *
 * @example
 * const r = await createReservations(tokens).reserve('key-1', { cost: 1200 });
 * if (r.allowed) { const used = await run(); await r.settle(used); }
 */
export function createReservations(
  limiter: ReservableLimiter,
  options: ReservationOptions = {},
  clock: Clock = limiter.clock,
): Reservations {
  // createLimiter's limiters charge debt even when handed here as a plain limiter.
  const charge = limiter.charge ?? chargeOf(limiter);
  const account: ReservationAccount<number> = {
    take: (key, cost) => limiter.check(key, { cost }),
    giveBack: (key, cost, takenAtMs) =>
      cost > 0 ? limiter.refund(key, { cost, ...(takenAtMs === undefined ? {} : { takenAtMs }) }) : Promise.resolve(),
    async settle(key, reserved, actual, takenAtMs) {
      if (actual <= reserved) {
        await account.giveBack(key, reserved - actual, takenAtMs);
        return { charged: actual, refunded: reserved - actual, extra: undefined };
      }
      // More than reserved: the request already ran, so its extra is owed. Charged past the limits if need be
      // (debt: later requests wait until it is paid), so over a window a key gets at most its limit plus one
      // request's overshoot. A limiter without charge takes it only while the limits allow it.
      if (charge !== undefined) {
        const { decision, took } = await charge(key, { cost: actual - reserved });
        return { charged: took ? actual : reserved, refunded: 0, extra: decision };
      }
      const extra = await limiter.check(key, { cost: actual - reserved });
      return { charged: extra.allowed ? actual : reserved, refunded: 0, extra };
    },
    invalid: (actual) =>
      typeof actual === 'number' && Number.isInteger(actual) && actual >= 0 && actual <= MAX_COST
        ? undefined
        : `the actual cost must be a whole number ≥ 0 (got ${String(actual)})`,
    zero: 0,
  };
  return createReservationBook(account, options, clock);
}

/** Reservations over any account (internal: `createReservations` and `sluice/llm` build on it). */
export function createReservationBook<C>(
  account: ReservationAccount<C>,
  options: ReservationOptions,
  clock: Clock,
): Reservations<C> {
  const resolved = resolveOptions(options);
  const records = options.reservationStore;
  return records === undefined
    ? createLocalBook(account, resolved, clock)
    : createRecordedBook(account, records, resolved, clock);
}
