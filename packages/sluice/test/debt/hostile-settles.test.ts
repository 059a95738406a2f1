/**
 * Hostile settles on `limiter.reserve` (issue 40), on the memory store and on Redis with the reservations recorded
 * in Redis (`reservationStore` on a plain limiter): negative, fractional, NaN, infinite, 1e308 and non-number
 * costs, unknown and absurd ids, floods of unknown ids and of settles of one id — each gets a coded answer, none
 * throws mid-request, and the counters change only by the one settle that counts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createManualClock } from '../../src/core/clock.js';
import { createLimiter, type Limiter } from '../../src/limiter/create-limiter.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisReservationRecords, createRedisStore } from '../../src/stores/redis/index.js';
import type { Store } from '../../src/stores/store.js';

const T0 = 1_700_000_000_000;
const BAD_COSTS: unknown[] = [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 1e308, '10', null, {}, 2 ** 53];

function hostile(name: string, open: () => Promise<{ limiter: (tag: string) => Limiter; close: () => Promise<void> }>) {
  describe(`hostile settles: ${name}`, () => {
    let make: (tag: string) => Limiter;
    let close: () => Promise<void>;
    before(async () => {
      ({ limiter: make, close } = await open());
    });
    after(async () => {
      await close?.();
    });

    it('bad costs are ERR_SLUICE_INVALID_COST and leave the reservation open; the good settle counts once', async () => {
      const limiter = make('costs');
      const r = await limiter.reserve('k', { cost: 10 });
      assert.equal(r.allowed, true);
      for (const cost of BAD_COSTS) {
        const s = await r.settle(cost as number);
        assert.equal(s.ok, false, String(cost));
        assert.equal((s as { code: string }).code, 'ERR_SLUICE_INVALID_COST', String(cost));
      }
      assert.equal((await limiter.peek('k')).remaining, 90, 'nothing changed');
      const good = await r.settle(130);
      assert.ok(good.ok && good.charged === 130 && good.extra?.allowed === false, 'the extra is owed: in debt');
      const again = await r.settle(1);
      assert.equal((again as { code: string }).code, 'ERR_SLUICE_RESERVATION_SETTLED');
      assert.equal((await limiter.peek('k', { cost: 0 })).allowed, false, 'the key owes 30 and waits');
    });

    it('a flood of unknown and absurd ids gets ERR_SLUICE_RESERVATION_UNKNOWN each, and changes nothing', async () => {
      const limiter = make('ids');
      const r = await limiter.reserve('k', { cost: 5 });
      const ids = [
        '',
        'nope',
        'x'.repeat(100_000),
        '__proto__',
        'constructor',
        `${r.id}x`,
        ...Array.from({ length: 500 }, (_, i) => `${i}.${Math.random().toString(36).slice(2)}`),
      ];
      const answers = await Promise.all(ids.map((id) => limiter.settle(id, 1)));
      for (const [i, a] of answers.entries())
        assert.equal((a as { code?: string }).code, 'ERR_SLUICE_RESERVATION_UNKNOWN', `id ${i}`);
      for (const id of [42, undefined, null, { id: r.id }])
        assert.equal(
          ((await limiter.cancel(id as never)) as { code?: string }).code,
          'ERR_SLUICE_RESERVATION_UNKNOWN',
          String(id),
        );
      assert.equal((await limiter.peek('k')).remaining, 95);
      // Settled by id (any process holding the same records could), once.
      assert.ok((await limiter.settle(r.id, 5)).ok);
      assert.equal(((await limiter.settle(r.id, 5)) as { code?: string }).code, 'ERR_SLUICE_RESERVATION_SETTLED');
    });

    it('a flood of settles of one id settles it once: one charge, the rest ERR_SLUICE_RESERVATION_SETTLED', async () => {
      const limiter = make('flood');
      const r = await limiter.reserve('k', { cost: 10 });
      const answers = await Promise.all(Array.from({ length: 300 }, () => r.settle(40)));
      assert.equal(answers.filter((a) => a.ok).length, 1);
      assert.ok(answers.every((a) => a.ok || a.code === 'ERR_SLUICE_RESERVATION_SETTLED'));
      assert.equal((await limiter.peek('k')).remaining, 60, 'charged 40 once');
    });
  });
}

hostile('memory store', async () => {
  const store = createMemoryStore({ sweepIntervalMs: 0 });
  return {
    limiter: (tag) =>
      createLimiter({
        name: tag,
        algorithm: 'token-bucket',
        limit: 100,
        period: '1m',
        store,
        clock: createManualClock(T0),
      }),
    close: () => store.close(),
  };
});

let server: RedisServerHandle | undefined;
after(async () => {
  await server?.stop();
});

hostile('Redis, reservations recorded in Redis', async () => {
  server = await startRedis();
  const client = new Redis(server.port, '127.0.0.1');
  const store: Store = createRedisStore({ client, clock: 'client', timeoutMs: 5000 });
  return {
    limiter: (tag) =>
      createLimiter({
        name: tag,
        algorithm: 'token-bucket',
        limit: 100,
        period: '1m',
        store,
        clock: createManualClock(T0),
        reservationStore: createRedisReservationRecords({ client, name: tag }),
      }),
    close: async () => {
      await store.close();
      client.disconnect();
    },
  };
});
