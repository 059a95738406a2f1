/**
 * What a key holds in Redis (docs/redis.md, "What one key holds"): GCRA and both buckets keep one
 * number, the theoretical arrival time in ticks, which Redis stores as an integer — the cheapest value
 * it has, and the same memory for the three. And a clock that goes back never lets a bucket admit more
 * than the memory store does. A sliding log keeps 8 bytes an entry, and a long one — patched in place,
 * compacted — decides as the memory store does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { type AlgorithmName, MAX_SLIDING_LOG_LIMIT, resolvePolicy } from '../../src/core/policy.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import { keyIdOf, stateKey, tagOf } from '../../src/stores/redis/keys.js';
import { LOG_ENTRY_SIZE, LOG_HEADER_SIZE } from '../../src/stores/redis/lua-macros.js';

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

  it('a sliding log keeps 8 bytes an entry, and its largest entry fits', async () => {
    const store = createRedisStore({ client: redis.client, prefix: 'log:', clock: 'client', timeoutMs: 2000 });
    const policy = resolvePolicy({ algorithm: 'sliding-log', limit: 100, period: 60_000 });
    const key = stateKey(tagOf('log:', 'u'), keyIdOf(policy));
    // Rewritten whole up to 32 entries, appended to after.
    for (let i = 1; i <= 40; i++) {
      await store.check('u', policy, 1, NOW + i, true);
      assert.equal(await redis.client.strlen(key), LOG_HEADER_SIZE + i * LOG_ENTRY_SIZE);
    }
    // A second request at the same millisecond adds to its entry (patched in place).
    await store.check('u', policy, 2, NOW + 40, true);
    assert.equal(await redis.client.strlen(key), LOG_HEADER_SIZE + 40 * LOG_ENTRY_SIZE);
    assert.equal((await store.check('u', policy, 0, NOW + 40, false)).remaining, 100 - 42);
    // An entry holds up to the limit, which must fit its 16-bit units field.
    assert.ok(MAX_SLIDING_LOG_LIMIT < 2 ** 16);
    const max = resolvePolicy({ algorithm: 'sliding-log', limit: MAX_SLIDING_LOG_LIMIT, period: 1000 });
    assert.equal((await store.check('m', max, MAX_SLIDING_LOG_LIMIT - 1, NOW, true)).remaining, 1);
    assert.equal((await store.check('m', max, 1, NOW, true)).remaining, 0);
    assert.equal((await store.check('m', max, 1, NOW + 999, true)).allowed, false);
    assert.equal((await store.check('m', max, MAX_SLIDING_LOG_LIMIT, NOW + 1000, true)).remaining, 0);
    await store.close();
  });

  it('a long sliding log (patched in place, compacted, refunded) decides as the memory store does', async () => {
    const store = createRedisStore({ client: redis.client, prefix: 'long:', clock: 'client', timeoutMs: 2000 });
    const memory = createMemoryStore({ sweepIntervalMs: 0 });
    const policy = resolvePolicy({ algorithm: 'sliding-log', limit: 150, period: 1000 });
    // A fixed pseudo-random walk: steps of 0–12 ms (0: a second request in the same millisecond), so
    // the log holds 100–150 entries, its head moves on every step and it is compacted again and again
    // (refunds, which rewrite it whole, only in the last third).
    let seed = 0x2545f491;
    /** xorshift32: an LCG's low bits repeat too soon to mix steps, costs and kinds. */
    const next = (n: number) => {
      seed ^= seed << 13;
      seed >>>= 0;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      seed >>>= 0;
      return seed % n;
    };
    let now = NOW;
    for (let step = 0; step < 3000; step++) {
      now += next(13);
      const roll = next(20);
      const cost = next(4);
      const where = `step ${step} at +${now - NOW}, cost ${cost}`;
      if (roll === 0 && step >= 2000) {
        await Promise.all([store.refund('k', policy, cost, now), memory.refund('k', policy, cost, now)]);
        continue;
      }
      const commit = roll !== 1;
      const [fromRedis, fromMemory] = await Promise.all([
        store.check('k', policy, cost, now, commit),
        memory.check('k', policy, cost, now, commit),
      ]);
      assert.deepEqual(fromRedis, fromMemory, where);
      if (step % 100 === 99) {
        // Compacted once the dead prefix is as long as the live part: never more than twice the limit.
        const bytes = await redis.client.strlen(stateKey(tagOf('long:', 'k'), keyIdOf(policy)));
        assert.ok(bytes <= LOG_HEADER_SIZE + (2 * policy.limit + 1) * LOG_ENTRY_SIZE, `${where}: ${bytes} bytes`);
      }
    }
    await store.close();
  });
});
