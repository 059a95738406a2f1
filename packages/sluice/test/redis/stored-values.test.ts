/**
 * What a key holds in Redis (docs/redis.md, "What one key holds"): GCRA and both buckets keep one
 * number, the theoretical arrival time in ticks, which Redis stores as an integer — the cheapest value
 * it has, and the same memory for the three. And a clock that goes back never lets a bucket admit more
 * than the memory store does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { type AlgorithmName, resolvePolicy } from '../../src/core/policy.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import { keyIdOf, stateKey, tagOf } from '../../src/stores/redis/keys.js';

const NOW = 1_700_000_000_000;
const TAT_ALGORITHMS: readonly AlgorithmName[] = ['token-bucket', 'leaky-bucket', 'gcra'];

describe('Redis store: what a key holds', () => {
  const redis = useRedis();

  for (const algorithm of TAT_ALGORITHMS) {
    it(`${algorithm}: one integer, the arrival time in ticks, under either clock`, async () => {
      const policy = resolvePolicy({ algorithm, limit: 7, period: 1000, burst: 3 });
      for (const clock of ['client', 'server'] as const) {
        const prefix = `held-${clock}:`;
        const store = createRedisStore({ client: redis.client, prefix, clock, timeoutMs: 2000 });
        const key = stateKey(tagOf(prefix, 'u'), keyIdOf(policy));
        await store.check('u', policy, 2, NOW, true);
        assert.equal(await redis.client.object('ENCODING', key), 'int', `${clock} clock`);
        if (clock === 'client') {
          // Two requests on an empty bucket at NOW: the arrival time is NOW plus two intervals.
          assert.equal(Number(await redis.client.get(key)), NOW * policy.scale + 2 * policy.intervalTicks);
        }
        await store.close();
      }
    });
  }

  it('the buckets cost Redis no more memory per key than GCRA', async () => {
    const usage: Record<string, number> = {};
    const store = createRedisStore({ client: redis.client, prefix: 'mem:', timeoutMs: 2000 });
    for (const algorithm of TAT_ALGORITHMS) {
      // Same limit and period: key names of the same length.
      const policy = resolvePolicy({ algorithm, limit: 100, period: 86_400_000 });
      await store.check('user:12345', policy, 1, 0, true);
      const key = stateKey(tagOf('mem:', 'user:12345'), keyIdOf(policy));
      usage[algorithm] = Number(await redis.client.memory('USAGE', key));
    }
    assert.equal(usage['token-bucket'], usage.gcra);
    assert.equal(usage['leaky-bucket'], usage.gcra);
    await store.close();
  });

  for (const algorithm of ['token-bucket', 'leaky-bucket'] as const) {
    it(`${algorithm}: a clock that goes back finds the bucket no emptier than the memory store does`, async () => {
      const policy = resolvePolicy({ algorithm, limit: 10, period: 1000, burst: 4 });
      const store = createRedisStore({
        client: redis.client,
        prefix: `back-${algorithm}:`,
        clock: 'client',
        timeoutMs: 2000,
      });
      const memory = createMemoryStore({ sweepIntervalMs: 0 });
      const both = async (at: number) => {
        const [r, m] = await Promise.all([
          store.check('k', policy, 1, at, true),
          memory.check('k', policy, 1, at, true),
        ]);
        return { r, m };
      };
      // Three requests at NOW, then callers whose clocks run 50 and 150 ms behind (half and one and a
      // half requests' worth of drain).
      for (let i = 0; i < 3; i++) {
        const { r, m } = await both(NOW);
        assert.deepEqual(r, m);
      }
      for (const behind of [50, 150]) {
        const { r, m } = await both(NOW - behind);
        assert.ok(r.remaining <= m.remaining, `${behind} ms behind: ${r.remaining} > ${m.remaining}`);
        if (!m.allowed) assert.equal(r.allowed, false, `${behind} ms behind: admitted where memory rejects`);
      }
      // Once the clock is past every stamp again, the two agree.
      const { r, m } = await both(NOW + 10_000);
      assert.deepEqual(r, m);
      await store.close();
    });
  }
});
