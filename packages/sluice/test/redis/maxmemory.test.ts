/**
 * Redis full: `maxmemory` reached under `noeviction`, so Redis refuses every write. Checks that arrive in
 * one tick share one script call; a refused write must fail only the request that needed it. A key over
 * its limit is still rejected, exactly, from what Redis can read — also by a new process (a new store,
 * its local cache empty) — while fresh keys, which need a write, follow the failure policy one by one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { ALGORITHMS } from '../../src/core/policy.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createRedisStore } from '../../src/stores/redis/index.js';

const FRESH = 10;

describe('Redis full (maxmemory, noeviction)', () => {
  let server: RedisServerHandle;
  let client: Redis;
  before(async () => {
    server = await startRedis({ args: ['--maxmemory', '64mb', '--maxmemory-policy', 'noeviction'] });
    client = new Redis(server.port, '127.0.0.1');
  });
  after(async () => {
    client?.disconnect();
    await server?.stop();
  });

  const single = (
    algorithm: (typeof ALGORITHMS)[number],
    store: ReturnType<typeof createRedisStore>,
    fail: 'open' | 'closed',
  ) => createLimiter({ algorithm, limit: 3, period: '1h', store, fail });
  const multi = (
    algorithm: (typeof ALGORITHMS)[number],
    store: ReturnType<typeof createRedisStore>,
    fail: 'open' | 'closed',
  ) =>
    createLimiter({
      store,
      fail,
      limits: [
        { name: 'short', algorithm, limit: 3, period: '1h' },
        { name: 'long', algorithm, limit: 10, period: '1d' },
      ],
    });

  it('before: alice and bob use up their limits; then Redis is filled until it refuses writes', async () => {
    const store = createRedisStore({ client, timeoutMs: 2000 });
    for (const algorithm of ALGORITHMS) {
      for (let i = 0; i < 4; i++) {
        await single(algorithm, store, 'closed').check('alice');
        await multi(algorithm, store, 'closed').check('bob');
      }
      assert.equal((await single(algorithm, store, 'closed').peek('alice')).remaining, 0);
    }
    await store.close();
    // Fill it, then hold it full: maxmemory below what is used. (Filling to the byte does not stay
    // full: a refused command's query buffer is freed after it, leaving room for a few small writes.)
    const chunk = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 16; i++) await client.set(`filler:${i}`, chunk);
    const used = Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1]);
    await client.config('SET', 'maxmemory', String(Math.floor(used / 2)));
    const refused = await client.set('one-more', 'x').then(
      () => false,
      (error: Error) => /^OOM/.test(error.message),
    );
    assert.ok(refused, 'Redis refused a write');
  });

  it("a lone check Redis cannot write fails with Redis's own words, for every algorithm", async () => {
    const errors: string[] = [];
    const store = createRedisStore({ client, timeoutMs: 2000, onError: (error) => errors.push(error.message) });
    for (const algorithm of ALGORITHMS) {
      // Alone in its tick: the batch script's one-item reply, not a batch's.
      const d = await single(algorithm, store, 'closed').check(`lone:${algorithm}`);
      assert.deepEqual([d.allowed, d.reason], [false, 'store-unavailable']);
    }
    assert.equal(errors.length, ALGORITHMS.length);
    for (const message of errors) assert.match(message, /^redis refused a write: OOM /);
    await store.close();
  });

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: over-limit keys rejected exactly in a batch with fresh keys, by a new store; fresh keys get the policy`, async () => {
      // A new store: an empty local over-limit cache, as in a process that never saw alice or bob.
      const store = createRedisStore({ client, timeoutMs: 2000 });
      const open = single(algorithm, store, 'open');
      const closed = single(algorithm, store, 'closed');
      const fresh = Array.from({ length: FRESH }, (_, i) => `fresh:${algorithm}:${i}`);
      // One tick: one batched script call per limiter kind.
      const [alice, bob, opened, closedOnes, peeks, multiFresh] = await Promise.all([
        open.check('alice'),
        multi(algorithm, store, 'open').check('bob'),
        Promise.all(fresh.map((k) => open.check(k))),
        Promise.all(fresh.map((k) => closed.check(k))),
        Promise.all(fresh.map((k) => open.peek(k))),
        Promise.all(fresh.map((k) => multi(algorithm, store, 'closed').check(k))),
      ]);
      assert.deepEqual(
        [alice.allowed, alice.degraded, alice.remaining],
        [false, undefined, 0],
        'alice: exact rejection',
      );
      assert.ok(alice.retryAfterMs > 0);
      assert.deepEqual([bob.allowed, bob.degraded], [false, undefined], 'bob (two limits): exact rejection');
      for (const d of opened)
        assert.deepEqual([d.allowed, d.degraded], [true, true], 'fresh, fail-open: degraded admission');
      for (const d of closedOnes) assert.deepEqual([d.allowed, d.reason], [false, 'store-unavailable']);
      for (const d of peeks)
        assert.deepEqual([d.allowed, d.degraded, d.remaining], [true, undefined, 3], 'a peek writes nothing');
      for (const d of multiFresh) assert.deepEqual([d.allowed, d.reason], [false, 'store-unavailable']);
      const stats = store.stats();
      assert.equal(stats.refused, 3 * FRESH, 'one refusal per request that needed a write');
      await store.close();
    });
  }
});
