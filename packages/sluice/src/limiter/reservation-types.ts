/**
 * What reservations are — a reservation, a settle's outcome, a book of them, the account a cost is taken from — and
 * the answers both books (in-process and store-recorded) give alike.
 */
import type { LimiterDecision } from './limiter-decision.js';
import type { LimiterKey } from './limiter-key.js';

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

/** A pending reservation: its key, what it took and when, when it lapses. */
export interface Held<C> {
  key: LimiterKey;
  cost: C;
  /**
   * When its cost was taken (the clock's ms): what it gives back goes only to the window that counted it. Absent in
   * a record an older version wrote: given back as if taken now.
   */
  takenAtMs?: number;
  expiresAt: number;
}

/**
 * Where a reservation's cost is taken from (internal): a limiter with one cost, or `sluice/llm`'s token
 * limiter with a cost per dimension.
 */
export interface ReservationAccount<C> {
  take(key: LimiterKey, cost: C): Promise<LimiterDecision>;
  /** Gives back `cost` taken at `takenAtMs` (undefined: now), only to the window that counted it. */
  giveBack(key: LimiterKey, cost: C, takenAtMs: number | undefined): Promise<void>;
  /**
   * Moves a reservation taken at `takenAtMs` to its actual cost: gives back what is over (to the window that counted
   * it, so nothing once that window has ended), takes what is under (now).
   */
  settle(
    key: LimiterKey,
    reserved: C,
    actual: C,
    takenAtMs: number | undefined,
  ): Promise<Omit<SettleResult<C> & { ok: true }, 'ok' | 'reserved'>>;
  /** Why `actual` cannot be a cost, or undefined when it can. */
  invalid(actual: unknown): string | undefined;
  readonly zero: C;
}

/** A book's options, checked. */
export interface BookOptions {
  ttlMs: number;
  onExpire: 'charge' | 'refund';
  /** Reservations held at once (and finished ids remembered). */
  max: number;
}

/** Longest id looked up: sluice's ids are ~20 characters, so a longer one is unknown without asking a store. */
const MAX_ID_LENGTH = 128;
/** An id no book could have handed out, answered without a look-up. */
const unknownId = (id: unknown) => typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH;
/** A settle or cancel that did nothing, as an answer. */
export const refusal = <C>(code: SettleRefusal, message: string): SettleResult<C> => ({ ok: false, code, message });

/** The refusals a settle or cancel gets before any look-up: a cost that cannot be one, an id no book hands out. */
export function refusedAtOnce<C>(
  account: ReservationAccount<C>,
  id: string,
  actual: C | undefined,
  onExpire: BookOptions['onExpire'],
): SettleResult<C> | undefined {
  const bad = actual === undefined ? undefined : account.invalid(actual);
  if (bad !== undefined) return refusal('ERR_SLUICE_INVALID_COST', `${bad}; the reservation stays open`);
  if (unknownId(id)) return refusal('ERR_SLUICE_RESERVATION_UNKNOWN', whyNot(undefined, onExpire));
  return undefined;
}

/** A fresh reservation id: a sequence number, then random letters so ids of different processes do not meet. */
export const newId = (sequence: number) =>
  `${sequence.toString(36)}.${Math.random().toString(36).slice(2, 10)}${Math.random().toString(36).slice(2, 10)}`;

/** The message of a refusal, saying what happened and what to do. */
export function whyNot(code: SettleRefusal | undefined, onExpire: 'charge' | 'refund'): string {
  if (code === 'ERR_SLUICE_RESERVATION_SETTLED')
    return 'this reservation was settled or cancelled already; nothing changed';
  if (code === 'ERR_SLUICE_RESERVATION_EXPIRED')
    return `this reservation expired unsettled and was ${onExpire === 'charge' ? 'charged in full' : 'refunded'}; settle sooner or raise reservationTtl`;
  return 'no such reservation (a wrong id, or one forgotten long ago)';
}

/** A refused reservation: nothing to settle. */
export function rejected<C>(decision: LimiterDecision, expiresAt: number): Reservation<C> {
  const answer = async (): Promise<SettleResult<C>> =>
    refusal('ERR_SLUICE_RESERVATION_UNKNOWN', 'the reservation was refused, so there is nothing to settle');
  return { allowed: false, decision, id: '', expiresAt, settle: answer, cancel: answer };
}
