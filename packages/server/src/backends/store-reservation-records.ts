/**
 * Reservation records that go with a store: the Redis backend registers a table in its Redis beside the
 * counters, so `/v1/check`'s reservations outlive the process that made them (settled by id on any
 * instance, swept by any instance when a crashed one left them). Keyed by the store object itself.
 */
import type { Store } from 'sluice';
import type { ReservationRecords } from 'sluice/redis';

const byStore = new WeakMap<Store, ReservationRecords>();

/** Records `store`'s reservations in `records` (the backend that built the store calls it). */
export function registerReservationRecords(store: Store, records: ReservationRecords): void {
  byStore.set(store, records);
}

/** The records that go with `store`, or undefined: its reservations are held by the process. */
export function reservationRecordsOf(store: Store): ReservationRecords | undefined {
  return byStore.get(store);
}
