/**
 * Reservations (issue 40) on the memory and Redis stores: settle lower gives back, higher takes the
 * extra, expiry by onExpire, coded answers for double settles, late settles and unknown ids, multi-limit
 * all or nothing, and memory ≡ Redis on random reserve/settle/cancel/expire traces (fast-check).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { createManualClock } from '../../src/core/clock.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import type { LimiterOptions } from '../../src/limiter/options.js';
import { createReservations, type ReservationOptions } from '../../src/limiter/reservations.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import type { Store } from '../../src/stores/store.js';

const T0 = 1_700_000_000_000;
// Top level: one redis-server for every describe of this file.
const redis = useRedis();
let prefix = 0;

const stores: Record<string, () => Store> = {
  memory: () => createMemoryStore(),
  redis: () => createRedisStore({ client: redis.client, clock: 'client', timeoutMs: 5000, prefix: `resv${++prefix}:` }),
};

function setup(
  makeStore: () => Store,
  limiter: Omit<LimiterOptions, 'store' | 'clock'>,
  options: ReservationOptions = {},
) {
  const clock = createManualClock(T0);
  const lim = createLimiter({ ...limiter, store: makeStore(), clock } as LimiterOptions);
  return { clock, lim, res: createReservations(lim, { reservationTtl: 1000, ...options }) };
}

for (const [name, makeStore] of Object.entries(stores)) {
  describe(`reservations on the ${name} store`, () => {
    const perHour = { algorithm: 'fixed-window', limit: 1000, period: '1h' } as const;

    it('settling lower gives the difference back; higher takes the extra; a second settle is refused', async () => {
      const { lim, res } = setup(makeStore, perHour);
      const r = await res.reserve('k', { cost: 100 });
      assert.equal(r.allowed, true);
      assert.equal((await lim.peek('k')).remaining, 900);
      assert.deepEqual(await r.settle(30), { ok: true, reserved: 100, charged: 30, refunded: 70, extra: undefined });
      assert.equal((await lim.peek('k')).remaining, 970);
      assert.equal(((await r.settle(30)) as { code: string }).code, 'ERR_SLUICE_RESERVATION_SETTLED');
      const more = await res.reserve('k', { cost: 100 });
      const s = await res.settle(more.id, 150);
      assert.ok(s.ok && s.charged === 150);
      assert.equal((await lim.peek('k')).remaining, 820);
      assert.equal(res.outstanding, 0);
    });

    it('unknown ids and bad costs get coded answers, not exceptions', async () => {
      const { res } = setup(makeStore, perHour);
      assert.equal(((await res.settle('nope', 1)) as { code: string }).code, 'ERR_SLUICE_RESERVATION_UNKNOWN');
      const r = await res.reserve('k', { cost: 5 });
      for (const bad of [-1, 1.5, Number.NaN, 2 ** 60])
        assert.equal(((await r.settle(bad)) as { code: string }).code, 'ERR_SLUICE_INVALID_COST');
      assert.equal(res.outstanding, 1, 'a refused settle leaves the reservation open');
    });

    it("expiry with onExpire 'charge' keeps the whole cost; with 'refund' gives it back", async () => {
      const charge = setup(makeStore, perHour);
      const r = await charge.res.reserve('k', { cost: 100 });
      charge.clock.advance(1001);
      const late = await r.settle(10);
      assert.equal((late as { code: string }).code, 'ERR_SLUICE_RESERVATION_EXPIRED');
      assert.equal((await charge.lim.peek('k')).remaining, 900);

      const refund = setup(makeStore, perHour, { onExpire: 'refund' });
      await refund.res.reserve('k', { cost: 100 });
      refund.clock.advance(1001);
      assert.equal(await refund.res.sweep(), 1);
      assert.equal((await refund.lim.peek('k')).remaining, 1000);
      assert.equal(refund.res.outstanding, 0);
    });

    it('past maxOutstanding the oldest reservation lapses early (memory stays bounded)', async () => {
      const { lim, res } = setup(makeStore, perHour, { maxOutstanding: 2, onExpire: 'refund' });
      const first = await res.reserve('k', { cost: 10 });
      await res.reserve('k', { cost: 10 });
      await res.reserve('k', { cost: 10 });
      assert.equal(res.outstanding, 2);
      assert.equal(((await first.settle(1)) as { code: string }).code, 'ERR_SLUICE_RESERVATION_EXPIRED');
      assert.equal((await lim.peek('k')).remaining, 980);
      for (let i = 0; i < 1000; i++) await res.settle(`flood-${i}`, 1);
      assert.equal(res.outstanding, 2);
    });

    it('a reservation over any limit of a multi-limit limiter takes from none', async () => {
      const { lim, res } = setup(makeStore, {
        limits: [
          { name: 'minute', limit: 100, period: '1m' },
          { name: 'hour', limit: 1000, period: '1h' },
        ],
      });
      const r = await res.reserve('k', { cost: 150 });
      assert.equal(r.allowed, false);
      assert.equal(((await r.settle(1)) as { code: string }).code, 'ERR_SLUICE_RESERVATION_UNKNOWN');
      const peek = await lim.peek('k');
      assert.deepEqual(peek.results?.map((l) => l.decision.remaining) ?? [peek.remaining], [100, 1000]);
    });
  });
}

describe('reservations: memory ≡ Redis on random traces', () => {
  type Op =
    | { kind: 'reserve'; key: number; cost: number }
    | { kind: 'settle' | 'cancel'; pick: number; cost: number }
    | { kind: 'advance'; ms: number };
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant('reserve' as const),
      key: fc.integer({ min: 0, max: 1 }),
      cost: fc.integer({ min: 0, max: 40 }),
    }),
    fc.record({
      kind: fc.constantFrom('settle' as const, 'cancel' as const),
      pick: fc.nat(20),
      cost: fc.integer({ min: 0, max: 60 }),
    }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 800 }) }),
  );
  it('gives the same decisions and settle answers', async () => {
    const seed = Date.now();
    console.log(`fast-check seed ${seed}`);
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { maxLength: 25 }),
        fc.constantFrom('charge' as const, 'refund' as const),
        async (ops, onExpire) => {
          const sides = [stores.memory, stores.redis].map((s) =>
            setup(s as () => Store, { algorithm: 'sliding-window', limit: 100, period: '10s' }, { onExpire }),
          );
          const ids: string[][] = [[], []];
          for (const op of ops) {
            const answers = await Promise.all(
              sides.map(async ({ clock, lim, res }, side) => {
                const mine = ids[side] as string[];
                if (op.kind === 'advance') {
                  clock.advance(op.ms);
                  return (await lim.peek('k0')).remaining;
                }
                if (op.kind === 'reserve') {
                  const r = await res.reserve(`k${op.key}`, { cost: op.cost });
                  mine.push(r.allowed ? r.id : '');
                  return [r.allowed, r.decision.remaining];
                }
                const id = mine.length === 0 ? 'none' : (mine[op.pick % mine.length] as string);
                const s = op.kind === 'settle' ? await res.settle(id, op.cost) : await res.cancel(id);
                return s.ok ? [s.charged, s.refunded] : s.code;
              }),
            );
            assert.deepEqual(answers[0], answers[1], JSON.stringify(op));
          }
        },
      ),
      { seed, numRuns: 40 },
    );
  });
});
