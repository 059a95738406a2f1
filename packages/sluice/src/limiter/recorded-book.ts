/**
 * The reservation book with store-side records (`reservationStore`): the record, not this process's table, says
 * whether a reservation is pending — taken out once, by a settle or by the sweep that claims it after its expiry.
 */
import type { Clock } from '../core/clock.js';
import type { ReservationRecords } from '../stores/reservation-records.js';
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

/** How often a process claims expired records of every process (its own lapse on its next call anyway). */
const CLAIM_EVERY_MS = 1000;
const CLAIM_BATCH = 100;

/** One recorded book: where costs go, where records live, and what this process remembers. */
interface Book<C> extends BookOptions {
  readonly account: ReservationAccount<C>;
  readonly records: ReservationRecords;
  readonly clock: Clock;
  /** id -> expiresAt, of this process's pending reservations (insertion order is expiry order: one TTL). */
  readonly mine: Map<string, number>;
  /** A bounded memory of finished ids, for the double-settle and expired answers. */
  readonly finished: Map<string, SettleRefusal>;
  sequence: number;
  claimedAt: number;
}

/**
 * The book with store-side records. A settle takes the record out of the store, so it works from any process
 * holding the same records, and a reservation is finished once however many processes try.
 */
export function createRecordedBook<C>(
  account: ReservationAccount<C>,
  records: ReservationRecords,
  options: BookOptions,
  clock: Clock,
): Reservations<C> {
  const book: Book<C> = {
    ...options,
    account,
    records,
    clock,
    mine: new Map(),
    finished: new Map(),
    sequence: 0,
    claimedAt: Number.NEGATIVE_INFINITY,
  };
  return {
    reserve: (key, { cost }) => reserve(book, key, cost),
    settle: (id, actual) => finish(book, id, actual),
    cancel: (id) => finish(book, id, undefined),
    sweep: () => sweep(book, true),
    get outstanding() {
      return book.mine.size;
    },
  };
}

/** Takes `cost` and records the reservation; a record the store refuses gives the cost back and throws. */
async function reserve<C>(book: Book<C>, key: LimiterKey, cost: C): Promise<Reservation<C>> {
  const { account, records, mine } = book;
  await sweep(book);
  if (mine.size >= book.max) await lapseOldest(book);
  // The time of the take, kept in the record: a give-back goes to the window that counted the cost, from any process.
  const takenAtMs = book.clock.now();
  const decision = await account.take(key, cost);
  const expiresAt = book.clock.now() + book.ttlMs;
  if (!decision.allowed) return rejected<C>(decision, expiresAt);
  const id = newId(++book.sequence);
  try {
    const held: Held<C> = { key, cost, takenAtMs, expiresAt };
    await records.add(id, expiresAt, JSON.stringify(held));
  } catch (error) {
    // Not recorded, so not settleable: what it took goes back, and the store's failure is the caller's.
    await account.giveBack(key, cost, takenAtMs);
    throw error;
  }
  mine.set(id, expiresAt);
  const settle = (actual: C) => finish(book, id, actual);
  return { allowed: true, decision, id, expiresAt, settle, cancel: () => finish(book, id, undefined) };
}

/** Past `maxOutstanding`: this process's oldest reservation expires early. */
async function lapseOldest<C>(book: Book<C>): Promise<void> {
  const oldest = book.mine.keys().next().value as string;
  const record = await book.records.take(oldest);
  if (record === undefined) remember(book, oldest, 'ERR_SLUICE_RESERVATION_EXPIRED');
  else await lapse(book, oldest, record);
}

/** Settles (`actual`) or cancels (undefined) the reservation `id`, if its record is still in the store. */
async function finish<C>(book: Book<C>, id: string, actual: C | undefined): Promise<SettleResult<C>> {
  const { account, onExpire } = book;
  const early = refusedAtOnce(account, id, actual, onExpire);
  if (early !== undefined) return early;
  await sweep(book);
  const record = await book.records.take(id);
  if (record === undefined) {
    const gone = goneCode(book, id);
    const code = book.finished.get(id) ?? gone;
    if (code !== undefined) remember(book, id, code);
    return refusal(code ?? 'ERR_SLUICE_RESERVATION_UNKNOWN', whyNot(code, onExpire));
  }
  remember(book, id, 'ERR_SLUICE_RESERVATION_SETTLED');
  const entry = JSON.parse(record) as Held<C>;
  const outcome = await account.settle(entry.key, entry.cost, actual ?? account.zero, takenAtOf(entry));
  return { ok: true, reserved: entry.cost, ...outcome };
}

/** Ours, but gone from the store: claimed as expired by another process, or settled there by id. */
function goneCode<C>(book: Book<C>, id: string): SettleRefusal | undefined {
  const at = book.mine.get(id);
  if (at === undefined) return undefined;
  return at <= book.clock.now() ? 'ERR_SLUICE_RESERVATION_EXPIRED' : 'ERR_SLUICE_RESERVATION_SETTLED';
}

/**
 * Claims expired records of every process (at most once a second unless forced or one of ours is due) and
 * applies `onExpire` to them; resolves to how many it claimed.
 */
async function sweep<C>(book: Book<C>, force = false): Promise<number> {
  const { mine } = book;
  const now = book.clock.now();
  let n = 0;
  let due = force || now - book.claimedAt >= CLAIM_EVERY_MS;
  for (const expiresAt of mine.values()) {
    if (expiresAt <= now) due = true;
    break;
  }
  if (!due) return 0;
  book.claimedAt = now;
  for (const { id, record } of await book.records.takeExpired(now, CLAIM_BATCH)) {
    await lapse(book, id, record);
    n++;
  }
  // Own reservations past their time that another process claimed: handled there.
  for (const [id, expiresAt] of mine) {
    if (expiresAt > now) break;
    remember(book, id, 'ERR_SLUICE_RESERVATION_EXPIRED');
  }
  return n;
}

/** An expired record this process took out: charged (left taken) or refunded by `onExpire`. */
async function lapse<C>(book: Book<C>, id: string, record: string): Promise<void> {
  remember(book, id, 'ERR_SLUICE_RESERVATION_EXPIRED');
  const held = JSON.parse(record) as Held<C>;
  if (book.onExpire === 'refund') await book.account.giveBack(held.key, held.cost, takenAtOf(held));
}

/** A record's take time; undefined (given back as if taken now) in a record without one, as older versions wrote. */
function takenAtOf<C>(held: Held<C>): number | undefined {
  return Number.isFinite(held.takenAtMs) ? held.takenAtMs : undefined;
}

/** Forgets `id` as pending and remembers how it finished (bounded by `max`). */
function remember<C>(book: Book<C>, id: string, code: SettleRefusal): void {
  book.mine.delete(id);
  book.finished.set(id, code);
  if (book.finished.size > book.max) book.finished.delete(book.finished.keys().next().value as string);
}
