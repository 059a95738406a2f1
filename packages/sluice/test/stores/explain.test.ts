/**
 * `limiter.explain(key)` agrees with the next check, on the memory and Redis stores, for every algorithm, several
 * limits (one blocking), costs and keys that leave a limit out (fast-check traces on a manual clock); it takes
 * nothing; and a failing store is explained by the failure policy, marked degraded.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { createManualClock } from '../../src/core/clock.js';
import { ALGORITHMS, isBucketAlgorithm } from '../../src/core/policy.js';
import { createLimiter, type LimiterKey } from '../../src/limiter/create-limiter.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import type { Store } from '../../src/stores/store.js';

const T0 = 1_700_000_000_000;
const redis = useRedis();
let prefix = 0;

const stores: Record<string, () => Store> = {
  memory: () => createMemoryStore(),
  redis: () => createRedisStore({ client: redis.client, clock: 'client', timeoutMs: 5000, prefix: `expl${++prefix}:` }),
};

/** One step of a trace: wait, then explain and check a key (a limit left out now and then) at a cost. */
const stepArb = fc.record({
  waitMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 }), fc.integer({ min: 1000, max: 5000 })),
  cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 6 })),
  user: fc.constantFrom('a', 'b'),
  withoutBurst: fc.boolean(),
});

for (const [storeName, makeStore] of Object.entries(stores)) {
  describe(`explain on the ${storeName} store`, () => {
    for (const algorithm of ALGORITHMS) {
      it(`${algorithm}: explain says what the next check decides, and takes nothing`, async () => {
        const seed = Date.now();
        console.log(`fast-check seed ${seed} (${storeName}, ${algorithm})`);
        const bucket = isBucketAlgorithm(algorithm) ? { burst: 4 } : {};
        await fc.assert(
          fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), async (steps) => {
            const clock = createManualClock(T0);
            const limiter = createLimiter({
              store: makeStore(),
              clock,
              limits: [
                { name: 'per-second', algorithm, limit: 3, period: '1s', ...bucket, blockDuration: '2s' },
                { name: 'per-minute', algorithm, limit: 10, period: '1m', ...bucket },
              ],
            });
            for (const step of steps) {
              clock.advance(step.waitMs);
              const key: LimiterKey = step.withoutBurst
                ? { 'per-minute': step.user }
                : { 'per-second': step.user, 'per-minute': step.user };
              const why = await limiter.explain(key, { cost: step.cost });
              assert.deepEqual(await limiter.explain(key, { cost: step.cost }), why, 'explain takes nothing');
              const decision = await limiter.check(key, { cost: step.cost });
              assert.equal(why.allowed, decision.allowed);
              assert.equal(why.limits.length, step.withoutBurst ? 1 : 2);
              const binding = why.limits.find((l) => l.binding);
              assert.equal(binding?.name, why.binding);
              if (!decision.allowed) {
                assert.equal(binding?.retryAfterMs, decision.retryAfterMs);
                assert.equal(binding?.reason, decision.reason);
                // A rejection takes nothing, so each limit's own answer is what explain saw.
                for (const [i, r] of (decision.results ?? []).entries()) {
                  assert.equal(why.limits[i]?.allowed, r.decision.allowed, r.name);
                  assert.equal(why.limits[i]?.remaining, r.decision.remaining, r.name);
                }
              }
              for (const l of why.limits) {
                assert.equal(l.resetAt, why.atMs + l.resetMs);
                assert.equal(l.used, Math.max(0, l.capacity - l.remaining));
              }
            }
          }),
          { seed, numRuns: storeName === 'redis' ? 15 : 60 },
        );
      });
    }
  });
}

describe('explain when the store fails', () => {
  it('answers with the failure policy, marked degraded', async () => {
    const refused = async (): Promise<never> => {
      throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
    };
    const broken: Store = {
      ...createMemoryStore(),
      name: 'broken',
      synchronous: false,
      check: refused,
      checkMany: refused,
    };
    const limiter = createLimiter({ store: broken, limit: 5, period: '1m', fail: 'closed' });
    const why = await limiter.explain('k');
    assert.equal(why.degraded, true);
    assert.equal(why.allowed, false);
    assert.equal(why.limits[0]?.reason, 'store-unavailable');
    assert.equal((await limiter.check('k')).allowed, false);
  });
});
