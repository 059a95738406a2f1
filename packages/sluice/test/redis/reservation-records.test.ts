/**
 * Store-side reservation records on Redis (issue 40): a reservation whose process died (its book
 * dropped, never settled) is refunded or kept charged by `onExpire` when another process sweeps after
 * its expiry; a settle by id works from any process, exactly once; a settle after another process
 * claimed the reservation is a coded answer; and the records are gone once everything is settled.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { createManualClock } from '../../src/core/clock.js';
import { isSluiceError } from '../../src/core/errors.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createReservations, type ReservationOptions } from '../../src/limiter/reservations.js';
import { createTokenLimiter } from '../../src/llm/create-token-limiter.js';
import { createRedisReservationRecords, createRedisStore } from '../../src/stores/redis/index.js';

const T0 = 1_700_000_000_000;
const redis = useRedis();
let n = 0;

/** Two "processes": their own limiter and book over one Redis (one store prefix, one records table). */
function processes(onExpire: NonNullable<ReservationOptions['onExpire']>) {
  const prefix = `rec${++n}:`;
  const clock = createManualClock(T0);
  const make = () => {
    const store = createRedisStore({ client: redis.client, clock: 'client', timeoutMs: 5000, prefix });
    const limiter = createLimiter({ algorithm: 'fixed-window', limit: 100, period: '1h', store, clock });
    const reservationStore = createRedisReservationRecords({ client: redis.client, prefix });
    return { limiter, book: createReservations(limiter, { reservationTtl: 1000, onExpire, reservationStore }) };
  };
  return { clock, a: make(), b: make(), prefix };
}

describe('reservation records on Redis', () => {
  for (const onExpire of ['refund', 'charge'] as const) {
    it(`a reservation left by a process that died is ${onExpire === 'refund' ? 'refunded' : 'kept charged'} by another's sweep`, async () => {
      const { clock, a, b } = processes(onExpire);
      const r = await a.book.reserve('k', { cost: 40 });
      assert.equal(r.allowed, true);
      // Process a dies here: its book is never called again.
      assert.equal((await b.limiter.peek('k')).remaining, 60);
      clock.advance(999);
      assert.equal(await b.book.sweep(), 0, 'not expired yet');
      clock.advance(1);
      assert.equal(await b.book.sweep(), 1);
      assert.equal((await b.limiter.peek('k')).remaining, onExpire === 'refund' ? 100 : 60);
      assert.equal(await b.book.sweep(), 0, 'claimed once');
    });
  }

  it('a settle by id works from any process, once; the reserving process then gets a coded answer', async () => {
    const { a, b } = processes('refund');
    const r = await a.book.reserve('k', { cost: 50 });
    const s = await b.book.settle(r.id, 20);
    assert.ok(s.ok && s.refunded === 30);
    assert.equal((await a.limiter.peek('k')).remaining, 80);
    assert.equal(((await r.settle(20)) as { code: string }).code, 'ERR_SLUICE_RESERVATION_SETTLED');
    assert.equal(((await b.book.settle(r.id, 20)) as { code: string }).code, 'ERR_SLUICE_RESERVATION_SETTLED');
    assert.equal(((await b.book.settle('nope', 1)) as { code: string }).code, 'ERR_SLUICE_RESERVATION_UNKNOWN');
    assert.equal(a.book.outstanding, 0);
  });

  it('a reservation another process claimed as expired answers EXPIRED to its own settle', async () => {
    const { clock, a, b } = processes('refund');
    const r = await a.book.reserve('k', { cost: 10 });
    clock.advance(2000);
    assert.equal(await b.book.sweep(), 1);
    assert.equal(((await r.settle(5)) as { code: string }).code, 'ERR_SLUICE_RESERVATION_EXPIRED');
    assert.equal((await a.limiter.peek('k')).remaining, 100, 'refunded once, not twice');
  });

  it('the token limiter records its reservations too; nothing is left in Redis once all are settled', async () => {
    const prefix = `rec${++n}:`;
    const clock = createManualClock(T0);
    const make = () =>
      createTokenLimiter({
        totalTokens: { limit: 1000, period: '1h', algorithm: 'fixed-window' },
        store: createRedisStore({ client: redis.client, clock: 'client', timeoutMs: 5000, prefix }),
        clock,
        reservationTtl: 1000,
        onExpire: 'refund',
        reservationStore: createRedisReservationRecords({ client: redis.client, prefix }),
      });
    const [a, b] = [make(), make()];
    const dead = await a.reserve('k', { inputTokens: 100, maxOutputTokens: 200 });
    const live = await a.reserve('k', { inputTokens: 10, maxOutputTokens: 20 });
    assert.ok((await b.settle(live.id, { inputTokens: 10, outputTokens: 5 })).ok);
    clock.advance(1000);
    assert.equal(await b.sweep(), 1);
    assert.ok(dead.allowed);
    const probe = await b.reserve('k', { inputTokens: 0, maxOutputTokens: 0 });
    assert.equal(probe.decision.results?.[0]?.decision.remaining, 1000 - 15);
    assert.ok((await probe.cancel()).ok);
    assert.deepEqual(await redis.client.keys(`${prefix}{resv:*`), []);
    assert.throws(
      () => createRedisReservationRecords({ client: redis.client, prefix: 'a{b' }),
      (e) => isSluiceError(e, 'ERR_SLUICE_INVALID_OPTION'),
    );
  });
});
