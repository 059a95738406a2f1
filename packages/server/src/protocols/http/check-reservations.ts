/**
 * `/v1/check`'s reservations (`op: reserve`, `settle`, `cancel`): a cost taken now and settled later by
 * id, bounded in count, each lapsing unsettled after a time-to-live, charged in full. Held in this
 * process — or, when the store's backend records them (Redis), in the store, for every instance.
 */
import type { Decision, Store } from 'sluice';
import type { ReservationRecords } from 'sluice/redis';
import { reservationRecordsOf } from '../../backends/store-reservation-records.js';
import {
  type Charge,
  type CheckReservations,
  checkedId,
  mismatch,
  move,
  refusal,
  tooMany,
} from './check-reservation-parts.js';
import { createRecordedCheckReservations } from './check-reservations-recorded.js';

export type { CheckReservations, Settled } from './check-reservation-parts.js';

/** How long a reservation may stay unsettled, by default (the library's `reservationTtl` default). */
export const DEFAULT_RESERVATION_TTL_MS = 600_000;
/** Most reservations held at once, by default. */
export const DEFAULT_MAX_RESERVATIONS = 100_000;

/** A reservation held: where its cost was taken, how much, until when. */
interface Held extends Charge {
  readonly expiresAt: number;
  /** Taken from nothing (an allow-listed key): settling it moves no counter. */
  readonly free: boolean;
}

/** Options of {@link createCheckReservations}. */
export interface CheckReservationOptions {
  readonly store: Store;
  /** @default DEFAULT_RESERVATION_TTL_MS */
  readonly ttlMs?: number;
  /** @default DEFAULT_MAX_RESERVATIONS */
  readonly max?: number;
  /** Where reservations are recorded for every instance. @default the store backend's (Redis), else none */
  readonly records?: ReservationRecords;
}

/** Creates the book; see the file's comment. */
export function createCheckReservations(options: CheckReservationOptions): CheckReservations {
  const { store } = options;
  const ttlMs = options.ttlMs ?? DEFAULT_RESERVATION_TTL_MS;
  const max = options.max ?? DEFAULT_MAX_RESERVATIONS;
  const records = options.records ?? reservationRecordsOf(store);
  if (records !== undefined) return createRecordedCheckReservations({ store, records, ttlMs, max });
  // One TTL for all, so insertion order is expiry order: lapsing reads from the front.
  const held = new Map<string, Held>();
  // Ids finished lately (settled or lapsed), so a double settle or a late one is told apart from a wrong id.
  const finished = new Map<string, 'settled' | 'expired'>();
  let sequence = 0;
  const prefix = Math.random().toString(36).slice(2, 8);

  const remember = (id: string, how: 'settled' | 'expired') => {
    finished.set(id, how);
    if (finished.size > max) finished.delete(finished.keys().next().value as string);
  };
  // A lapsed reservation stays charged in full (onExpire 'charge'): nothing to give back, only to forget.
  const lapse = (nowMs: number) => {
    for (const [id, entry] of held) {
      if (entry.expiresAt > nowMs) break;
      held.delete(id);
      remember(id, 'expired');
    }
  };

  return {
    async reserve(storedKey, policy, cost, atMs, free) {
      lapse(atMs);
      if (held.size >= max) throw tooMany(max);
      const decision: Decision = free
        ? { allowed: true, limit: policy.limit, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 }
        : await store.check(storedKey, policy, cost, atMs, true);
      if (!decision.allowed) return { decision };
      const id = `${prefix}.${(++sequence).toString(36)}.${Math.random().toString(36).slice(2, 10)}`;
      const expiresAt = atMs + ttlMs;
      held.set(id, { storedKey, policy, cost, takenAtMs: atMs, expiresAt, free });
      return { decision, reservation: { id, expiresAt } };
    },
    async settle(rawId, storedKey, policy, actual, atMs) {
      const id = checkedId(rawId);
      lapse(atMs);
      const entry = held.get(id);
      if (entry === undefined) throw refusal(finished.get(id));
      if (entry.storedKey !== storedKey || entry.policy.id !== policy.id) throw mismatch();
      held.delete(id);
      remember(id, 'settled');
      return entry.free
        ? { settled: true, reserved: entry.cost, charged: 0, refunded: 0 }
        : move(store, entry, actual ?? 0, atMs);
    },
    get outstanding() {
      return held.size;
    },
  };
}
