/**
 * `/v1/check`'s settle and cancel give back to the window that counted the reservation: one after the window
 * rolled frees nothing in the new window, one in the same window gives back as before. The book held in this
 * process (memory store) and the one recorded in Redis (settled by a second book, as another instance would).
 * Times are the callers' (`atMs`), as with --client-clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMemoryStore, resolvePolicy, type Store } from 'sluice';
import { createRedisReservationRecords, createRedisStore } from 'sluice/redis';
import { useRedis } from '../../../../../test/helpers/redis-client.js';
import type { CheckReservations } from './check-reservation-parts.js';
import { createCheckReservations } from './check-reservations.js';

/** The start of a window of every period used here. */
const W = 1_900_000_000_000;
const redis = useRedis();
let n = 0;

type Books = { store: Store; reserving: CheckReservations; settling: CheckReservations };

const setups: Record<string, () => Books> = {
  'held in the process (memory store)': () => {
    const store = createMemoryStore({ sweepIntervalMs: 0 });
    const book = createCheckReservations({ store });
    return { store, reserving: book, settling: book };
  },
  'recorded in Redis, settled by another instance': () => {
    const prefix = `crw${++n}:`;
    const store = createRedisStore({ client: redis.client, clock: 'client', timeoutMs: 5000, prefix });
    const records = createRedisReservationRecords({ client: redis.client, prefix });
    const book = () => createCheckReservations({ store, records });
    return { store, reserving: book(), settling: book() };
  },
};

for (const [name, setup] of Object.entries(setups)) {
  describe(`/v1/check settle and cancel give back to the reservation's window: ${name}`, () => {
    const policy = resolvePolicy({ algorithm: 'fixed-window', limit: 10, period: 1000 });
    const remaining = async (store: Store, at: number) => (await store.check('k', policy, 1, at, false)).remaining;

    for (const [how, actual] of [
      ['settle under the estimate', 2],
      ['cancel', undefined],
    ] as const) {
      it(`${how} after the window rolled leaves the new window's room unchanged`, async () => {
        const { store, reserving, settling } = setup();
        const { reservation } = await reserving.reserve('k', policy, 6, W + 900, false);
        assert.ok(reservation, 'taken in window 0');
        assert.ok((await store.check('k', policy, 10, W + 1050, true)).allowed, 'window 1 filled');
        const settled = await settling.settle(reservation?.id, 'k', policy, actual, W + 1100);
        assert.equal(settled.refunded, actual === undefined ? 6 : 4);
        assert.equal(await remaining(store, W + 1100), 0, "window 1's room is unchanged");
      });
    }

    it('a settle in the same window gives the difference back, as before', async () => {
      const { store, reserving, settling } = setup();
      const { reservation } = await reserving.reserve('k', policy, 6, W + 100, false);
      await settling.settle(reservation?.id, 'k', policy, 2, W + 500);
      assert.equal(await remaining(store, W + 500), 8);
    });
  });
}
