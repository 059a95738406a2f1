/**
 * Differential property test of reservations with debt (issue 40): random traces of reserve, settle (under, equal,
 * over — past the limit), cancel, time advances and expiry sweeps on a two-limit limiter give identical answers on
 * the memory store and on a real Redis (client clock), for every algorithm and both onExpire policies.
 * fast-check prints the seed and the shrunk trace on failure.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createManualClock } from '../../src/core/clock.js';
import { ALGORITHMS, type AlgorithmName } from '../../src/core/policy.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import type { Reservation } from '../../src/limiter/reservations.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore, type RedisStore } from '../../src/stores/redis/index.js';

const T0 = 1_700_000_000_000;
const NUM_RUNS = Number(process.env.SLUICE_PROPERTY_RUNS ?? 60);

type Op =
  | { kind: 'reserve'; key: number; cost: number }
  | { kind: 'settle'; slot: number; actual: number }
  | { kind: 'cancel'; slot: number }
  | { kind: 'advance'; permille: number }
  | { kind: 'sweep' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('reserve' as const), key: fc.nat(1), cost: fc.nat(6) }) },
  // Settles far over the reservation too: the extra goes into debt.
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('settle' as const), slot: fc.nat(7), actual: fc.nat(25) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), slot: fc.nat(7) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      permille: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 }), fc.integer({ min: 0, max: 2500 })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('sweep' as const) }) },
);

/** A reservation without its id (random per process): what must be the same on both stores. */
const comparable = (r: Reservation) => ({ allowed: r.allowed, decision: r.decision, expiresAt: r.expiresAt });

describe('reservations with debt: memory ≡ Redis on random traces', () => {
  let server: RedisServerHandle;
  let client: Redis;
  let redis: RedisStore;
  let run = 0;
  before(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1');
    redis = createRedisStore({ client, clock: 'client', timeoutMs: 5000 });
    await redis.ready();
  });
  after(async () => {
    await redis?.close();
    client?.disconnect();
    await server?.stop();
  });

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: identical reservations, settles, cancels and expiries`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 12 }),
          fc.constantFrom(100, 1000, 60_000),
          fc.constantFrom('charge' as const, 'refund' as const),
          fc.array(opArb, { minLength: 1, maxLength: 40 }),
          async (limit, period, onExpire, ops) => {
            const clock = createManualClock(T0 + (run % 997));
            const limiterOn = (store: ReturnType<typeof createMemoryStore> | RedisStore) =>
              createLimiter({
                limits: [
                  { name: 'short', algorithm: algorithm as AlgorithmName, limit, period },
                  { name: 'long', algorithm: algorithm as AlgorithmName, limit: limit * 3, period: period * 4 },
                ],
                store,
                clock,
                reservationTtl: period * 2,
                onExpire,
              });
            const memory = limiterOn(createMemoryStore({ sweepIntervalMs: 0 }));
            const onRedis = limiterOn(redis);
            const keys = [0, 1].map((k) => `resdiff${++run}:${k}`);
            const held: [Reservation, Reservation][] = [];
            for (const [step, op] of ops.entries()) {
              const where = `step ${step} ${JSON.stringify(op)}`;
              if (op.kind === 'advance') clock.advance(Math.floor((op.permille * period) / 1000));
              else if (op.kind === 'sweep') {
                clock.advance(period * 2);
                assert.equal(
                  await onRedis
                    .reserve(keys[0] as string, { cost: 0 })
                    .then(comparable)
                    .then(JSON.stringify),
                  await memory
                    .reserve(keys[0] as string, { cost: 0 })
                    .then(comparable)
                    .then(JSON.stringify),
                  where,
                );
              } else if (op.kind === 'reserve') {
                const key = keys[op.key] as string;
                const [m, r] = [
                  await memory.reserve(key, { cost: op.cost }),
                  await onRedis.reserve(key, { cost: op.cost }),
                ];
                assert.deepEqual(comparable(r), comparable(m), where);
                if (m.allowed) held.push([m, r]);
              } else {
                const pair = held[op.slot % Math.max(1, held.length)];
                if (pair === undefined) continue;
                const [m, r] = pair;
                const act = (x: Reservation) => (op.kind === 'cancel' ? x.cancel() : x.settle(op.actual));
                assert.deepEqual(await act(r), await act(m), where);
              }
            }
          },
        ),
        { numRuns: NUM_RUNS },
      );
    });
  }
});
