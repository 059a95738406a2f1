/**
 * The reservation book kept in this process (no `reservationStore`): pending reservations in a map whose insertion
 * order is their expiry order (one TTL for all), so a sweep reads from the front.
 */
import type { Clock } from '../core/clock.js';
import type { LimiterKey } from './limiter-key.js';
import {
  type BookOptions,
  type Held,
  newId,
  type Reservation,
  type ReservationAccount,
  type Reservations,
  refusal,
  refusedAtOnce,
  rejected,
  type SettleRefusal,
  type SettleResult,
  whyNot,
} from './reservation-types.js';

/** One local book: where costs go, and the reservations it holds and has finished. */
interface Book<C> extends BookOptions {
  readonly account: ReservationAccount<C>;
  readonly clock: Clock;
  readonly held: Map<string, Held<C>>;
  /** A bounded memory of finished ids, for the double-settle and expired answers. */
  readonly finished: Map<string, SettleRefusal>;
  sequence: number;
}

/** The book kept in this process: a settle works only here, and a crash forgets what was pending. */
export function createLocalBook<C>(
  account: ReservationAccount<C>,
  options: BookOptions,
  clock: Clock,
): Reservations<C> {
  const book: Book<C> = { ...options, account, clock, held: new Map(), finished: new Map(), sequence: 0 };
  return {
    reserve: (key, { cost }) => reserve(book, key, cost),
    settle: (id, actual) => finish(book, id, actual),
    cancel: (id) => finish(book, id, undefined),
    sweep: () => sweep(book),
    get outstanding() {
      return book.held.size;
    },
  };
}

/** Takes `cost` and holds the reservation; past `maxOutstanding` the oldest expires early. */
async function reserve<C>(book: Book<C>, key: LimiterKey, cost: C): Promise<Reservation<C>> {
  const { held } = book;
  await sweep(book);
  if (held.size >= book.max) {
    const [id, entry] = held.entries().next().value as [string, Held<C>];
    await lapse(book, id, entry);
  }
  // The time of the take: a give-back goes to the window that counted the cost, not to the one of the settle.
  const takenAtMs = book.clock.now();
  const decision = await book.account.take(key, cost);
  const expiresAt = book.clock.now() + book.ttlMs;
  if (!decision.allowed) return rejected<C>(decision, expiresAt);
  const id = newId(++book.sequence);
  held.set(id, { key, cost, takenAtMs, expiresAt });
  return {
    allowed: true,
    decision,
    id,
    expiresAt,
    settle: (actual) => finish(book, id, actual),
    cancel: () => finish(book, id, undefined),
  };
}

/** Settles (`actual`) or cancels (undefined) the reservation `id`, if it is still held. */
async function finish<C>(book: Book<C>, id: string, actual: C | undefined): Promise<SettleResult<C>> {
  const { account, onExpire, finished } = book;
  const early = refusedAtOnce(account, id, actual, onExpire);
  if (early !== undefined) return early;
  await sweep(book);
  const entry = book.held.get(id);
  if (entry === undefined)
    return refusal(finished.get(id) ?? 'ERR_SLUICE_RESERVATION_UNKNOWN', whyNot(finished.get(id), onExpire));
  book.held.delete(id);
  remember(book, id, 'ERR_SLUICE_RESERVATION_SETTLED');
  const outcome = await account.settle(entry.key, entry.cost, actual ?? account.zero, entry.takenAtMs);
  return { ok: true, reserved: entry.cost, ...outcome };
}

/** Applies `onExpire` to every reservation past its time; resolves to how many there were. */
async function sweep<C>(book: Book<C>): Promise<number> {
  const now = book.clock.now();
  let n = 0;
  for (const [id, entry] of book.held) {
    if (entry.expiresAt > now) break;
    await lapse(book, id, entry);
    n++;
  }
  return n;
}

/** A reservation past its time (or pushed out): charged (left taken) or refunded by `onExpire`. */
async function lapse<C>(book: Book<C>, id: string, entry: Held<C>): Promise<void> {
  book.held.delete(id);
  remember(book, id, 'ERR_SLUICE_RESERVATION_EXPIRED');
  if (book.onExpire === 'refund') await book.account.giveBack(entry.key, entry.cost, entry.takenAtMs);
}

/** Remembers how `id` finished (bounded by `max`). */
function remember<C>(book: Book<C>, id: string, code: SettleRefusal): void {
  book.finished.set(id, code);
  if (book.finished.size > book.max) book.finished.delete(book.finished.keys().next().value as string);
}
