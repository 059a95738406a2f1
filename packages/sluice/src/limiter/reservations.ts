/**
 * Reservations over any limiter: take an estimated cost now, settle the real cost later (give back
 * the difference, or take the extra), with a time-to-live after which an unsettled reservation is
 * charged or refunded. Built on the limiter's check and refund, so every store and every limit of a
 * multi-limit limiter takes part all or nothing.
 */
import type { Clock } from '../core/clock.js';
import { type Duration, parseDuration } from '../core/duration.js';
import { SluiceError } from '../core/errors.js';
import type { Limiter, LimiterDecision, LimiterKey } from './create-limiter.js';

/** Options of {@link createReservations}. */
export interface ReservationOptions {
  /** How long a reservation may stay unsettled. @default '10m' */
  reservationTtl?: Duration;
  /** What an unsettled reservation costs once its time is up: all it reserved, or nothing. @default 'charge' */
  onExpire?: 'charge' | 'refund';
  /** Reservations held at once; past it the oldest expires early (by `onExpire`). @default 100000 */
  maxOutstanding?: number;
}

/** Why a settle or cancel did nothing. Answers, not exceptions: they come mid-request. */
export type SettleRefusal =
  | 'ERR_SLUICE_RESERVATION_UNKNOWN'
  | 'ERR_SLUICE_RESERVATION_SETTLED'
  | 'ERR_SLUICE_RESERVATION_EXPIRED'
  | 'ERR_SLUICE_INVALID_COST';

/** The outcome of a settle or cancel. */
export type SettleResult =
  | { ok: true; reserved: number; charged: number; refunded: number; extra: LimiterDecision | undefined }
  | { ok: false; code: SettleRefusal; message: string };

/** A cost taken ahead of knowing it. */
export interface Reservation {
  readonly allowed: boolean;
  readonly decision: LimiterDecision;
  /** Settle by this id from anywhere holding the same `Reservations` (empty when not allowed). */
  readonly id: string;
  readonly expiresAt: number;
  settle(actualCost: number): Promise<SettleResult>;
  cancel(): Promise<SettleResult>;
}

/** Reservations on one limiter. */
export interface Reservations {
  reserve(key: LimiterKey, options: { cost: number }): Promise<Reservation>;
  settle(id: string, actualCost: number): Promise<SettleResult>;
  cancel(id: string): Promise<SettleResult>;
  /** Applies `onExpire` to every reservation past its time; resolves to how many there were. */
  sweep(): Promise<number>;
  /** Reservations neither settled nor expired. */
  readonly outstanding: number;
}

interface Held {
  key: LimiterKey;
  cost: number;
  expiresAt: number;
}

const MAX_COST = Number.MAX_SAFE_INTEGER;
const refusal = (code: SettleRefusal, message: string): SettleResult => ({ ok: false, code, message });

function resolveOptions(options: ReservationOptions) {
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
  limiter: Limiter,
  options: ReservationOptions = {},
  clock: Clock = limiter.clock,
): Reservations {
  const { ttlMs, onExpire, max } = resolveOptions(options);
  // One TTL for all, so insertion order is expiry order: the sweep reads from the front.
  const held = new Map<string, Held>();
  const finished = new Map<string, SettleRefusal>();
  let sequence = 0;

  const remember = (id: string, code: SettleRefusal) => {
    finished.set(id, code);
    // A bounded memory of finished ids, for the double-settle and expired answers.
    if (finished.size > max) finished.delete(finished.keys().next().value as string);
  };
  const lapse = async (id: string, entry: Held) => {
    held.delete(id);
    remember(id, 'ERR_SLUICE_RESERVATION_EXPIRED');
    if (onExpire === 'refund' && entry.cost > 0) await limiter.refund(entry.key, { cost: entry.cost });
  };
  const sweep = async () => {
    const now = clock.now();
    let n = 0;
    for (const [id, entry] of held) {
      if (entry.expiresAt > now) break;
      await lapse(id, entry);
      n++;
    }
    return n;
  };

  const finish = async (id: string, actual: number | undefined): Promise<SettleResult> => {
    if (actual !== undefined && (!Number.isInteger(actual) || actual < 0 || actual > MAX_COST))
      return refusal(
        'ERR_SLUICE_INVALID_COST',
        `the actual cost must be a whole number ≥ 0 (got ${String(actual)}); the reservation stays open`,
      );
    await sweep();
    const entry = held.get(id);
    if (entry === undefined) {
      const code = finished.get(id) ?? 'ERR_SLUICE_RESERVATION_UNKNOWN';
      const why = {
        ERR_SLUICE_RESERVATION_UNKNOWN: 'no such reservation (a wrong id, or one forgotten long ago)',
        ERR_SLUICE_RESERVATION_SETTLED: 'this reservation was settled or cancelled already; nothing changed',
        ERR_SLUICE_RESERVATION_EXPIRED: `this reservation expired unsettled and was ${onExpire === 'charge' ? 'charged in full' : 'refunded'}; settle sooner or raise reservationTtl`,
        ERR_SLUICE_INVALID_COST: '',
      }[code];
      return refusal(code, why);
    }
    held.delete(id);
    remember(id, 'ERR_SLUICE_RESERVATION_SETTLED');
    const charged = actual ?? 0;
    if (charged < entry.cost) {
      await limiter.refund(entry.key, { cost: entry.cost - charged });
      return { ok: true, reserved: entry.cost, charged, refunded: entry.cost - charged, extra: undefined };
    }
    // More than reserved: take the extra if the limits allow it now; when they do not, it is not taken
    // (the request already ran) — the overshoot of one request over its reservation.
    const extra = charged > entry.cost ? await limiter.check(entry.key, { cost: charged - entry.cost }) : undefined;
    const took = extra === undefined || extra.allowed ? charged : entry.cost;
    return { ok: true, reserved: entry.cost, charged: took, refunded: 0, extra };
  };

  const reservations: Reservations = {
    async reserve(key, { cost }) {
      await sweep();
      if (held.size >= max) {
        const [id, entry] = held.entries().next().value as [string, Held];
        await lapse(id, entry);
      }
      const decision = await limiter.check(key, { cost });
      const expiresAt = clock.now() + ttlMs;
      if (!decision.allowed) return rejected(decision, expiresAt);
      const id = `${(++sequence).toString(36)}.${Math.random().toString(36).slice(2, 10)}`;
      held.set(id, { key, cost, expiresAt });
      return {
        allowed: true,
        decision,
        id,
        expiresAt,
        settle: (actual) => finish(id, actual),
        cancel: () => finish(id, undefined),
      };
    },
    settle: (id, actual) => finish(id, actual),
    cancel: (id) => finish(id, undefined),
    sweep,
    get outstanding() {
      return held.size;
    },
  };
  return reservations;
}

function rejected(decision: LimiterDecision, expiresAt: number): Reservation {
  const answer = async () =>
    refusal('ERR_SLUICE_RESERVATION_UNKNOWN', 'the reservation was refused, so there is nothing to settle');
  return { allowed: false, decision, id: '', expiresAt, settle: answer, cancel: answer };
}
