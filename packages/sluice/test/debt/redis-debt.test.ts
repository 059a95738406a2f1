/**
 * Debt on Redis beyond the client clock (issue 40): on Redis's own clock (`TIME`, the default) a charge puts every
 * algorithm's key in debt and every key keeps a TTL; on a 3-master Cluster a charge of keys in several slots (one
 * script per slot) decides as the memory store does, and leaves no key without a TTL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { type RedisServerHandle, startRedis, startRedisCluster } from '../../../../test/helpers/redis-server.js';
import { ALGORITHMS, resolvePolicy } from '../../src/core/policy.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore, type RedisStore } from '../../src/stores/redis/index.js';
import type { StoreItem } from '../../src/stores/store.js';
import { keysWithoutTtl } from '../redis/ttl-check.js';
import { debtPolicies, memoryDebt, runDebt, T0 } from './debt-scenario.js';

describe('debt on Redis: the server clock', () => {
  let server: RedisServerHandle;
  let client: Redis;
  let store: RedisStore;
  before(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1');
    store = createRedisStore({ client, timeoutMs: 5000 });
    await store.ready();
  });
  after(async () => {
    assert.deepEqual((await keysWithoutTtl(client)).missing, [], 'keys without a TTL');
    await store?.close();
    client?.disconnect();
    await server?.stop();
  });

  // A day's period: the milliseconds this test takes stay in one window and drain nothing that matters.
  for (const algorithm of ALGORITHMS) {
    const policy = resolvePolicy({ algorithm, limit: 10, period: '1d' });
    it(`${algorithm}: charged past the limit, refused while it owes`, async () => {
      const key = `server-clock:${algorithm}`;
      const filled = await store.check(key, policy, 10, Date.now(), true);
      assert.equal(filled.allowed, true);
      const [owed] = await store.charge([{ key, policy, cost: 7 }], Date.now());
      assert.equal(owed?.allowed, false, 'in debt');
      assert.equal(owed?.remaining, 0);
      assert.ok((owed?.retryAfterMs ?? 0) > 0);
      const refused = await store.check(key, policy, 1, Date.now(), true);
      assert.equal(refused.allowed, false);
      assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 2 * policy.periodMs);
      if (algorithm === 'fixed-window') {
        const raw = await client.get((await client.keys(`*${key}*`))[0] as string);
        assert.equal(raw, '17', 'the window holds the debt: 10 + 7');
      }
    });
  }
});

describe('debt on a 3-master Redis Cluster', () => {
  let cluster: Awaited<ReturnType<typeof startRedisCluster>>;
  let client: Cluster;
  let store: RedisStore;
  before(async () => {
    cluster = await startRedisCluster(3);
    client = new Cluster(cluster.startupNodes, { lazyConnect: true });
    await client.connect();
    store = createRedisStore({ client, clock: 'client', timeoutMs: 5000 });
    await store.ready();
  });
  after(async () => {
    assert.deepEqual((await keysWithoutTtl(client)).missing, [], 'keys without a TTL');
    await store?.close();
    client?.disconnect();
    await cluster?.stop();
  });

  for (const policy of debtPolicies()) {
    it(`${policy.algorithm}: the scenario decides as the memory store`, async () => {
      assert.deepEqual(await runDebt(store, policy, `cluster:${policy.algorithm}`), await memoryDebt(policy));
    });
  }

  it('a charge of keys in several slots: one script per slot, the same decisions as memory', async () => {
    const [a, b, c] = debtPolicies();
    const items: StoreItem[] = ['alpha', 'beta', 'gamma', 'delta'].map((key, i) => ({
      key: `slots:${key}`,
      policy: [a, b, c][i % 3] as NonNullable<typeof a>,
      cost: 6 + i * 3,
    }));
    const memory = createMemoryStore({ sweepIntervalMs: 0 });
    assert.deepEqual(await store.charge(items, T0), memory.charge(items, T0));
    assert.deepEqual(await store.checkMany(items, T0 + 5, false), memory.checkMany(items, T0 + 5, false));
    await memory.close();
  });
});
