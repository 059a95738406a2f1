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

/** What reservations need of a limiter: its check and refund, and its clock. */
export interface ReservableLimiter {
  readonly clock: Clock;
  check(key: LimiterKey, options: { cost: number }): Promise<LimiterDecision>;
  refund(key: LimiterKey, options: { cost: number }): Promise<void>;
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

/** Why a settle or cancel did nothing. Answers, not exceptions: they come mid-request. */
export type SettleRefusal =
  | 'ERR_SLUICE_RESERVATION_UNKNOWN'
  | 'ERR_SLUICE_RESERVATION_SETTLED'
  | 'ERR_SLUICE_RESERVATION_EXPIRED'
  | 'ERR_SLUICE_INVALID_COST'
  | 'ERR_SLUICE_STORE_UNAVAILABLE';

/** The outcome of a settle or cancel. */
export type SettleResult<C = number> =
  | { ok: true; reserved: C; charged: C; refunded: C; extra: LimiterDecision | undefined }
  | { ok: false; code: SettleRefusal; message: string };

/** A cost taken ahead of knowing it. */
export interface Reservation<C = number> {
  readonly allowed: boolean;
  readonly decision: LimiterDecision;
  /** Settle by this id from anywhere holding the same `Reservations` (empty when not allowed). */
  readonly id: string;
  readonly expiresAt: number;
  settle(actualCost: C): Promise<SettleResult<C>>;
  cancel(): Promise<SettleResult<C>>;
}

/** Reservations on one limiter. */
export interface Reservations<C = number> {
  reserve(key: LimiterKey, options: { cost: C }): Promise<Reservation<C>>;
  settle(id: string, actualCost: C): Promise<SettleResult<C>>;
  cancel(id: string): Promise<SettleResult<C>>;
  /** Applies `onExpire` to every reservation past its time; resolves to how many there were. */
  sweep(): Promise<number>;
  /** Reservations neither settled nor expired. */
  readonly outstanding: number;
}

interface Held<C> {
  key: LimiterKey;
  cost: C;
  expiresAt: number;
}

/**
 * Where a reservation's cost is taken from (internal): a limiter with one cost, or `sluice/llm`'s token
 * limiter with a cost per dimension.
 */
export interface ReservationAccount<C> {
  take(key: LimiterKey, cost: C): Promise<LimiterDecision>;
  giveBack(key: LimiterKey, cost: C): Promise<void>;
  /** Moves a reservation to its actual cost: gives back what is over, takes what is under. */
  settle(key: LimiterKey, reserved: C, actual: C): Promise<Omit<SettleResult<C> & { ok: true }, 'ok' | 'reserved'>>;
  /** Why `actual` cannot be a cost, or undefined when it can. */
  invalid(actual: unknown): string | undefined;
  readonly zero: C;
}

const MAX_COST = Number.MAX_SAFE_INTEGER;
/** Longest id looked up: sluice's ids are ~20 characters, so a longer one is unknown without asking a store. */
const MAX_ID_LENGTH = 128;
const unknownId = (id: unknown) => typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH;
const refusal = <C>(code: SettleRefusal, message: string): SettleResult<C> => ({ ok: false, code, message });

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
    giveBack: (key, cost) => (cost > 0 ? limiter.refund(key, { cost }) : Promise.resolve()),
    async settle(key, reserved, actual) {
      if (actual <= reserved) {
        await account.giveBack(key, reserved - actual);
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
  const { ttlMs, onExpire, max } = resolveOptions(options);
  const records = options.reservationStore;
  if (records !== undefined) return createRecordedBook(account, records, { ttlMs, onExpire, max }, clock);
  // One TTL for all, so insertion order is expiry order: the sweep reads from the front.
  const held = new Map<string, Held<C>>();
  const finished = new Map<string, SettleRefusal>();
  let sequence = 0;

  const remember = (id: string, code: SettleRefusal) => {
    finished.set(id, code);
    // A bounded memory of finished ids, for the double-settle and expired answers.
    if (finished.size > max) finished.delete(finished.keys().next().value as string);
  };
  const lapse = async (id: string, entry: Held<C>) => {
    held.delete(id);
    remember(id, 'ERR_SLUICE_RESERVATION_EXPIRED');
    if (onExpire === 'refund') await account.giveBack(entry.key, entry.cost);
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

  const finish = async (id: string, actual: C | undefined): Promise<SettleResult<C>> => {
    const bad = actual === undefined ? undefined : account.invalid(actual);
    if (bad !== undefined) return refusal('ERR_SLUICE_INVALID_COST', `${bad}; the reservation stays open`);
    if (unknownId(id)) return refusal('ERR_SLUICE_RESERVATION_UNKNOWN', whyNot(undefined, onExpire));
    await sweep();
    const entry = held.get(id);
    if (entry === undefined)
      return refusal(finished.get(id) ?? 'ERR_SLUICE_RESERVATION_UNKNOWN', whyNot(finished.get(id), onExpire));
    held.delete(id);
    remember(id, 'ERR_SLUICE_RESERVATION_SETTLED');
    const outcome = await account.settle(entry.key, entry.cost, actual ?? account.zero);
    return { ok: true, reserved: entry.cost, ...outcome };
  };

  return {
    async reserve(key, { cost }) {
      await sweep();
      if (held.size >= max) {
        const [id, entry] = held.entries().next().value as [string, Held<C>];
        await lapse(id, entry);
      }
      const decision = await account.take(key, cost);
      const expiresAt = clock.now() + ttlMs;
      if (!decision.allowed) return rejected<C>(decision, expiresAt);
      const id = newId(++sequence);
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
}

const newId = (sequence: number) =>
  `${sequence.toString(36)}.${Math.random().toString(36).slice(2, 10)}${Math.random().toString(36).slice(2, 10)}`;

interface Resolved {
  ttlMs: number;
  onExpire: 'charge' | 'refund';
  max: number;
}

/** How often a process claims expired records of every process (its own lapse on its next call anyway). */
const CLAIM_EVERY_MS = 1000;
const CLAIM_BATCH = 100;

/**
 * The book with store-side records: the record, not this process's table, says whether a reservation
 * is pending — taken out once, by a settle or by the sweep that claims it after its expiry.
 */
function createRecordedBook<C>(
  account: ReservationAccount<C>,
  records: ReservationRecords,
  { ttlMs, onExpire, max }: Resolved,
  clock: Clock,
): Reservations<C> {
  const mine = new Map<string, number>(); // id -> expiresAt, of this process's pending reservations
  const finished = new Map<string, SettleRefusal>();
  let sequence = 0;
  let claimedAt = Number.NEGATIVE_INFINITY;
  const remember = (id: string, code: SettleRefusal) => {
    mine.delete(id);
    finished.set(id, code);
    if (finished.size > max) finished.delete(finished.keys().next().value as string);
  };
  const lapse = async (id: string, record: string) => {
    remember(id, 'ERR_SLUICE_RESERVATION_EXPIRED');
    const held = JSON.parse(record) as Held<C>;
    if (onExpire === 'refund') await account.giveBack(held.key, held.cost);
  };
  const sweep = async (force = false) => {
    const now = clock.now();
    let n = 0;
    let due = force || now - claimedAt >= CLAIM_EVERY_MS;
    for (const expiresAt of mine.values()) {
      if (expiresAt <= now) due = true;
      break;
    }
    if (!due) return 0;
    claimedAt = now;
    for (const { id, record } of await records.takeExpired(now, CLAIM_BATCH)) {
      await lapse(id, record);
      n++;
    }
    // Own reservations past their time that another process claimed: handled there.
    for (const [id, expiresAt] of mine) {
      if (expiresAt > now) break;
      remember(id, 'ERR_SLUICE_RESERVATION_EXPIRED');
    }
    return n;
  };
  const finish = async (id: string, actual: C | undefined): Promise<SettleResult<C>> => {
    const bad = actual === undefined ? undefined : account.invalid(actual);
    if (bad !== undefined) return refusal('ERR_SLUICE_INVALID_COST', `${bad}; the reservation stays open`);
    if (unknownId(id)) return refusal('ERR_SLUICE_RESERVATION_UNKNOWN', whyNot(undefined, onExpire));
    await sweep();
    const record = await records.take(id);
    if (record === undefined) {
      // Ours, but gone from the store: claimed as expired by another process, or settled there by id.
      const at = mine.get(id);
      const gone =
        at === undefined
          ? undefined
          : at <= clock.now()
            ? 'ERR_SLUICE_RESERVATION_EXPIRED'
            : 'ERR_SLUICE_RESERVATION_SETTLED';
      const code = finished.get(id) ?? gone;
      if (code !== undefined) remember(id, code);
      return refusal(code ?? 'ERR_SLUICE_RESERVATION_UNKNOWN', whyNot(code, onExpire));
    }
    remember(id, 'ERR_SLUICE_RESERVATION_SETTLED');
    const entry = JSON.parse(record) as Held<C>;
    const outcome = await account.settle(entry.key, entry.cost, actual ?? account.zero);
    return { ok: true, reserved: entry.cost, ...outcome };
  };
  return {
    async reserve(key, { cost }) {
      await sweep();
      if (mine.size >= max) {
        const oldest = mine.keys().next().value as string;
        const record = await records.take(oldest);
        if (record === undefined) remember(oldest, 'ERR_SLUICE_RESERVATION_EXPIRED');
        else await lapse(oldest, record);
      }
      const decision = await account.take(key, cost);
      const expiresAt = clock.now() + ttlMs;
      if (!decision.allowed) return rejected<C>(decision, expiresAt);
      const id = newId(++sequence);
      try {
        await records.add(id, expiresAt, JSON.stringify({ key, cost, expiresAt }));
      } catch (error) {
        // Not recorded, so not settleable: what it took goes back, and the store's failure is the caller's.
        await account.giveBack(key, cost);
        throw error;
      }
      mine.set(id, expiresAt);
      const settle = (actual: C) => finish(id, actual);
      return { allowed: true, decision, id, expiresAt, settle, cancel: () => finish(id, undefined) };
    },
    settle: (id, actual) => finish(id, actual),
    cancel: (id) => finish(id, undefined),
    sweep: () => sweep(true),
    get outstanding() {
      return mine.size;
    },
  };
}

function whyNot(code: SettleRefusal | undefined, onExpire: 'charge' | 'refund'): string {
  if (code === 'ERR_SLUICE_RESERVATION_SETTLED')
    return 'this reservation was settled or cancelled already; nothing changed';
  if (code === 'ERR_SLUICE_RESERVATION_EXPIRED')
    return `this reservation expired unsettled and was ${onExpire === 'charge' ? 'charged in full' : 'refunded'}; settle sooner or raise reservationTtl`;
  return 'no such reservation (a wrong id, or one forgotten long ago)';
}

function rejected<C>(decision: LimiterDecision, expiresAt: number): Reservation<C> {
  const answer = async (): Promise<SettleResult<C>> =>
    refusal('ERR_SLUICE_RESERVATION_UNKNOWN', 'the reservation was refused, so there is nothing to settle');
  return { allowed: false, decision, id: '', expiresAt, settle: answer, cancel: answer };
}
