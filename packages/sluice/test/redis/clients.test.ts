/**
 * The other client shapes and the server clock: a node-redis cluster, an ioredis cluster with Redis
 * time, and the fixed window's server-clock encoding (the count as an integer, the window as the key's
 * expiry). Redis time cannot be injected, so these use long periods and look at keys, never sleep.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { createCluster } from 'redis';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { type RedisClusterHandle, startRedisCluster } from '../../../../test/helpers/redis-server.js';
import { ALGORITHMS, resolvePolicy } from '../../src/core/policy.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createRedisStore, slotOf } from '../../src/stores/redis/index.js';

describe('Redis Cluster: node-redis and ioredis, server clock', () => {
  let cluster: RedisClusterHandle;
  before(async () => {
    cluster = await startRedisCluster(3);
  });
  after(async () => {
    await cluster?.stop();
  });

  it('node-redis createCluster: checks, multi-slot all-or-nothing, reset and leases', async () => {
    const client = createCluster({ rootNodes: cluster.ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })) });
    await client.connect();
    const store = createRedisStore({ client, timeoutMs: 2000 });
    try {
      const limiter = createLimiter({
        store,
        fail: 'closed',
        limits: [
          { name: 'ip', limit: 3, period: '1h' },
          { name: 'user', limit: 2, period: '1h', algorithm: 'gcra' },
        ],
      });
      // Keys chosen so the two limits land in different slots.
      const key = { ip: '10.0.0.1', user: 'alice' };
      assert.deepEqual(
        [(await limiter.check(key)).allowed, (await limiter.check(key)).allowed, (await limiter.check(key)).allowed],
        [true, true, false],
      );
      const ipOnly = await limiter.peek({ ip: '10.0.0.1', user: null });
      assert.equal(ipOnly.remaining, 1, 'the rejected request was refunded from the other slot');
      await limiter.reset(key);
      assert.equal((await limiter.check(key)).remaining, 1);
      const held = await store.acquire('job', 1, 60_000, 0);
      assert.ok(held.lease);
      assert.equal((await store.acquire('job', 1, 60_000, 0)).allowed, false);
      assert.equal(await store.release(held.lease, 0), true);
    } finally {
      await store.close();
      await client.close();
    }
  });

  it('computes the same hash slots as Redis', async () => {
    const client = new Redis(cluster.ports[0] as number, '127.0.0.1');
    try {
      const keys = [
        'foo',
        'sluice:{user:42}:fw1/1000',
        'a{}b',
        '{}',
        'x{é漢}y',
        'p{\\[a\\]}:q',
        `k{${'z'.repeat(300)}}`,
      ];
      for (const key of keys) assert.equal(slotOf(key), Number(await client.cluster('KEYSLOT', key)), key);
    } finally {
      client.disconnect();
    }
  });

  it('ioredis Cluster with Redis time: exact counts for every algorithm', async () => {
    const client = new Cluster(cluster.startupNodes);
    const store = createRedisStore({ client, timeoutMs: 2000 });
    try {
      for (const algorithm of ALGORITHMS) {
        const limiter = createLimiter({ algorithm, limit: 5, period: '1h', store, fail: 'closed' });
        const ds = await Promise.all(Array.from({ length: 8 }, () => limiter.check(`c:${algorithm}`)));
        assert.equal(ds.filter((d) => d.allowed).length, 5, algorithm);
        assert.ok(ds.every((d) => !d.degraded));
      }
    } finally {
      await store.close();
      client.disconnect();
    }
  });
});

/** Redis's clock in ms, as the scripts read it. */
async function redisNow(client: Redis): Promise<number> {
  const [seconds, micros] = (await client.time()) as [number, number];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

describe('server clock: fixed-window encoding', () => {
  const redis = useRedis();

  it('stores the count as an integer that expires at the last millisecond of its window', async () => {
    const { client } = redis;
    const store = createRedisStore({ client, prefix: 'enc:', timeoutMs: 2000 });
    const period = 60_000;
    const p = resolvePolicy({ algorithm: 'fixed-window', limit: 1000, period });
    for (let i = 0; i < 3; i++) await store.check('k', p, 2, 0, true);
    // The fixed window's key id: limit 1000 in base 36 ("rs"), period 1 minute.
    const key = 'enc:{k}:frs.1m';
    assert.equal(await client.get(key), '6');
    const expireAt = Number(await client.call('PEXPIRETIME', key));
    assert.equal((expireAt + 1) % period, 0, 'expires at a window boundary − 1 ms');
    const serverNow = await redisNow(client);
    assert.ok(expireAt >= serverNow && expireAt < serverNow + period);
    const d = await store.check('k', p, 1, 0, false);
    assert.equal(d.remaining, 994);
    assert.ok(Math.abs(serverNow + d.resetMs - (expireAt + 1)) < 50, 'resetMs is the time to the window end');
    await store.refund('k', p, 4, 0);
    assert.equal(await client.get(key), '2');
    assert.equal(Number(await client.call('PEXPIRETIME', key)), expireAt, 'a refund keeps the window');
    await store.close();
  });

  it('answers a stored key and a new one in the same batch each with its own window end', async () => {
    const { client } = redis;
    const store = createRedisStore({ client, prefix: 'mix:', timeoutMs: 2000 });
    const period = 60_000;
    const p = resolvePolicy({ algorithm: 'fixed-window', limit: 10, period });
    await store.check('old', p, 3, 0, true);
    // The first check goes alone; the two that arrive while it is in flight go as one batch: a stored
    // key (its time left from PTTL) and a new key (Redis's TIME, read once for the call).
    const [, stored, fresh] = await Promise.all([
      store.check('other', p, 1, 0, true),
      store.check('old', p, 2, 0, true),
      store.check('new', p, 4, 0, true),
    ]);
    const serverNow = await redisNow(client);
    for (const [name, d, remaining] of [
      ['old', stored, 5],
      ['new', fresh, 6],
    ] as const) {
      assert.equal(d?.allowed, true);
      assert.equal(d?.remaining, remaining);
      // The key expires at its window's last millisecond: resetMs must end there.
      const expireAt = Number(await client.call('PEXPIRETIME', `mix:{${name}}:fa.1m`));
      assert.ok(
        Math.abs(serverNow + (d?.resetMs ?? 0) - (expireAt + 1)) < 50,
        `${name}: resetMs is the time to the window end`,
      );
    }
    await store.close();
  });

  it('blocks a rejected key for its block duration', async () => {
    const { client } = redis;
    const store = createRedisStore({ client, prefix: 'blk:', timeoutMs: 2000 });
    const p = resolvePolicy({ algorithm: 'fixed-window', limit: 2, period: 3_600_000, blockDuration: 30_000 });
    assert.equal((await store.check('k', p, 1, 0, true)).allowed, true);
    assert.equal((await store.check('k', p, 1, 0, true)).allowed, true);
    const over = await store.check('k', p, 1, 0, true);
    assert.equal(over.allowed, false);
    assert.equal(over.reason, undefined, 'over the limit, not yet blocked');
    const blocked = await store.check('k', p, 1, 0, true);
    assert.equal(blocked.allowed, false);
    assert.equal(blocked.reason, 'blocked');
    assert.ok(
      blocked.retryAfterMs > 29_000 && blocked.retryAfterMs <= 30_000,
      `blocked for ${blocked.retryAfterMs} ms`,
    );
    await store.close();
  });
});

describe('server clock: a stored key tells the time (its PTTL), and lone allowed replies are one integer', () => {
  const redis = useRedis();

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: the second check, timed from the key's expiry, agrees with Redis's clock`, async () => {
      const { client } = redis;
      const store = createRedisStore({ client, prefix: 'pttl:', timeoutMs: 2000 });
      // 100 per 100 s: a bucket refills one unit a second, so a clock 1 s off shows in `remaining`.
      const p = resolvePolicy({ algorithm, limit: 100, period: 100_000 });
      const first = await store.check(algorithm, p, 40, 0, true); // a new key: the script reads TIME
      const second = await store.check(algorithm, p, 1, 0, true); // a stored key: NOW = its expiry − PTTL
      const serverNow = await redisNow(client);
      assert.equal(first.allowed, true);
      assert.equal(second.allowed, true);
      assert.equal(second.remaining, 59, `${algorithm}: 41 of 100 used`);
      const [key] = await client.keys(`pttl:{${algorithm}}:*`);
      const expireAt = Number(await client.call('PEXPIRETIME', key as string));
      // Every algorithm's reset after an allowed write is when its key expires (the fixed window's
      // key expires at the window's last millisecond).
      assert.ok(
        Math.abs(serverNow + second.resetMs - expireAt) < 100,
        `${algorithm}: reset ${second.resetMs} ms ends at the key's expiry (${expireAt - serverNow} ms away)`,
      );
      await store.close();
    });
  }

  it('answers past the packed reply’s bounds (remaining ≥ 2^24, reset ≥ 2^29 ms) exactly', async () => {
    const { client } = redis;
    const store = createRedisStore({ client, prefix: 'wide:', timeoutMs: 2000 });
    const many = resolvePolicy({ algorithm: 'token-bucket', limit: 20_000_000, period: 86_400_000 });
    const d1 = await store.check('k', many, 1, 0, true);
    assert.equal(d1.remaining, 19_999_999);
    assert.equal(d1.resetMs, 5, 'one unit drains in 4.32 ms');
    const week = 7 * 86_400_000;
    const long = resolvePolicy({ algorithm: 'sliding-log', limit: 10, period: week });
    const d2 = await store.check('k', long, 1, 0, true);
    assert.equal(d2.remaining, 9);
    assert.equal(d2.resetMs, week);
    await store.close();
  });

  it('answers a leaky bucket past its packed bounds (reset ≥ 2^28 ms) exactly, delay included', async () => {
    const store = createRedisStore({ client: redis.client, prefix: 'wide-leaky:', clock: 'client', timeoutMs: 2000 });
    // Two a week: each request adds 3.5 days (302,400,000 ms, past 2^28) to the queue.
    const p = resolvePolicy({ algorithm: 'leaky-bucket', limit: 2, period: 7 * 86_400_000 });
    const first = await store.check('k', p, 1, 0, true);
    assert.deepEqual([first.remaining, first.resetMs, first.delayMs], [1, 302_400_000, 0]);
    const second = await store.check('k', p, 1, 0, true);
    assert.deepEqual([second.remaining, second.resetMs, second.delayMs], [0, 604_800_000, 302_400_000]);
    await store.close();
  });
});
