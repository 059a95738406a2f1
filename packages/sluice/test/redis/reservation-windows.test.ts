/**
 * A reservation gives back to the window that counted its estimate: a settle under the estimate, a cancel or a
 * refund on expiry after the window rolled frees nothing in the new window (it would then admit more than its
 * limit), and one in the same window gives back as before. Fixed window and sliding log, on the memory and Redis
 * stores, with the book in this process and recorded in Redis (settled by another "process"), and the token
 * limiter. Injected clocks.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { createManualClock } from '../../src/core/clock.js';
import type { AlgorithmName } from '../../src/core/policy.js';
import { createLimiter, type Limiter } from '../../src/limiter/create-limiter.js';
import { createReservations, type ReservationOptions, type Reservations } from '../../src/limiter/reservations.js';
import { createTokenLimiter } from '../../src/llm/create-token-limiter.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisReservationRecords, createRedisStore } from '../../src/stores/redis/index.js';
import type { Store } from '../../src/stores/store.js';

/** The start of a window of every period used here. */
const W = 1_700_000_000_000;
const redis = useRedis();
let n = 0;

const stores: Record<string, () => Store> = {
  memory: () => createMemoryStore({ sweepIntervalMs: 0 }),
  redis: () => createRedisStore({ client: redis.client, clock: 'client', timeoutMs: 5000, prefix: `rw${++n}:` }),
};

/** Books: this process's, or records in Redis settled through a second book (another process) on the same records. */
const books: Record<string, (lim: Limiter, options: ReservationOptions) => [Reservations, Reservations]> = {
  'local book': (lim, options) => {
    const book = createReservations(lim, options);
    return [book, book];
  },
  'recorded book': (lim, options) => {
    const reservationStore = createRedisReservationRecords({ client: redis.client, name: `rw${++n}` });
    const withRecords = { ...options, reservationStore };
    return [createReservations(lim, withRecords), createReservations(lim, withRecords)];
  },
};

function setup(makeStore: () => Store, makeBooks: (typeof books)[string], algorithm: AlgorithmName, at: number) {
  const clock = createManualClock(at);
  const lim = createLimiter({ algorithm, limit: 10, period: 1000, store: makeStore(), clock });
  const [reserving, settling] = makeBooks(lim, { reservationTtl: 2000, onExpire: 'refund' });
  return { clock, lim, reserving, settling };
}

/** A token limiter of 100 input tokens per fixed window of 1 s. */
const tokenLimiter = (store: Store, clock: ReturnType<typeof createManualClock>) =>
  createTokenLimiter({ inputTokens: { limit: 100, period: 1000, algorithm: 'fixed-window' }, store, clock });

for (const [storeName, makeStore] of Object.entries(stores)) {
  for (const [bookName, makeBooks] of Object.entries(books)) {
    describe(`reservations give back to the window that counted them: ${storeName} store, ${bookName}`, () => {
      for (const how of ['settle under the estimate', 'cancel'] as const) {
        const finish = (book: Reservations, id: string) => (how === 'cancel' ? book.cancel(id) : book.settle(id, 2));

        it(`fixed-window: ${how} after the window rolled leaves the new window's room unchanged`, async () => {
          const { clock, lim, reserving, settling } = setup(makeStore, makeBooks, 'fixed-window', W + 900);
          const r = await reserving.reserve('k', { cost: 6 });
          assert.ok(r.allowed, 'the estimate, taken in window 0');
          clock.set(W + 1050);
          assert.ok((await lim.check('k', { cost: 10 })).allowed, 'window 1 filled');
          clock.set(W + 1100);
          assert.equal((await finish(settling, r.id)).ok, true);
          assert.equal((await lim.peek('k')).remaining, 0, "window 1's room is unchanged");
          assert.equal((await lim.check('k')).allowed, false, 'an eleventh unit in window 1');
        });

        it(`sliding-log: ${how} after the entry left the window leaves the window's room unchanged`, async () => {
          const { clock, lim, reserving, settling } = setup(makeStore, makeBooks, 'sliding-log', W);
          const r = await reserving.reserve('k', { cost: 6 });
          assert.ok(r.allowed);
          clock.set(W + 1500);
          assert.ok((await lim.check('k', { cost: 10 })).allowed, 'the window (W+500, W+1500] filled');
          clock.set(W + 1600);
          assert.equal((await finish(settling, r.id)).ok, true);
          assert.equal((await lim.peek('k')).remaining, 0);
          assert.equal((await lim.check('k')).allowed, false);
        });
      }

      it("sliding-log: a settle gives back from the reservation's own entry, not from a later request's", async () => {
        const { clock, lim, reserving, settling } = setup(makeStore, makeBooks, 'sliding-log', W);
        const r = await reserving.reserve('k', { cost: 6 });
        clock.set(W + 500);
        assert.ok((await lim.check('k', { cost: 4 })).allowed);
        clock.set(W + 600);
        assert.deepEqual(await settling.settle(r.id, 2), {
          ok: true,
          reserved: 6,
          charged: 2,
          refunded: 4,
          extra: undefined,
        });
        assert.equal((await lim.peek('k')).remaining, 4);
        // Once the reservation's entry (W+0) leaves the window, the later request's 4 units still count.
        clock.set(W + 1001);
        assert.equal((await lim.peek('k')).remaining, 6);
      });

      for (const algorithm of ['fixed-window', 'sliding-log'] as const) {
        it(`${algorithm}: a settle in the same window gives the difference back, as before`, async () => {
          const { clock, lim, reserving, settling } = setup(makeStore, makeBooks, algorithm, W + 100);
          const r = await reserving.reserve('k', { cost: 6 });
          clock.set(W + 500);
          assert.equal((await settling.settle(r.id, 2)).ok, true);
          assert.equal((await lim.peek('k')).remaining, 8);
        });
      }

      it("fixed-window: onExpire 'refund' after the window rolled leaves the new window's room unchanged", async () => {
        const { clock, lim, reserving, settling } = setup(makeStore, makeBooks, 'fixed-window', W + 900);
        assert.ok((await reserving.reserve('k', { cost: 6 })).allowed, 'lapses at W+2900');
        clock.set(W + 2050);
        assert.ok((await lim.check('k', { cost: 10 })).allowed);
        clock.set(W + 2950);
        assert.equal(await settling.sweep(), 1, 'the reservation lapsed and is refunded');
        assert.equal((await lim.peek('k')).remaining, 0);
      });
    });
  }

  describe(`token reservations give back to the window that counted them: ${storeName} store`, () => {
    it('a settle under the estimate after the window rolled frees nothing in the new window', async () => {
      const clock = createManualClock(W + 900);
      const tokens = tokenLimiter(makeStore(), clock);
      const r = await tokens.reserve('k', { inputTokens: 60, maxOutputTokens: 0 });
      assert.ok(r.allowed);
      clock.set(W + 1050);
      assert.ok((await tokens.reserve('k', { inputTokens: 100, maxOutputTokens: 0 })).allowed, 'window 1 filled');
      clock.set(W + 1100);
      assert.equal((await r.settle({ inputTokens: 10, outputTokens: 0 })).ok, true);
      assert.equal((await tokens.reserve('k', { inputTokens: 1, maxOutputTokens: 0 })).allowed, false);
    });

    it('a settle in the same window gives the difference back, as before', async () => {
      const clock = createManualClock(W + 100);
      const tokens = tokenLimiter(makeStore(), clock);
      const r = await tokens.reserve('k', { inputTokens: 60, maxOutputTokens: 0 });
      clock.set(W + 500);
      assert.equal((await r.settle({ inputTokens: 10, outputTokens: 0 })).ok, true);
      assert.ok((await tokens.reserve('k', { inputTokens: 90, maxOutputTokens: 0 })).allowed);
    });
  });
}
