/**
 * The store conformance suite, unchanged, against the Redis store: on a standalone redis-server, on
 * a 3-master Redis Cluster, and through node-redis, iovalkey and valkey-glide clients. Client clock,
 * because the suite drives time.
 */
import assert from 'node:assert/strict';
import { GlideClient, Logger } from '@valkey/valkey-glide';
import { Cluster, Redis } from 'ioredis';
import { Redis as Valkey } from 'iovalkey';
import { createClient } from 'redis';
import { startRedis, startRedisCluster } from '../../../../test/helpers/redis-server.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import { runStoreConformance } from '../stores/suite.js';
import { keysWithoutTtl } from './ttl-check.js';

/** After the suite: every key it left behind expires by itself. */
async function assertAllKeysExpire(client: Redis | Cluster): Promise<void> {
  const { seen, missing } = await keysWithoutTtl(client);
  assert.ok(seen > 0, 'the suite wrote keys');
  assert.deepEqual(missing, [], 'keys without a TTL');
}

runStoreConformance('redis (ioredis, standalone)', async () => {
  const server = await startRedis();
  const client = new Redis(server.port, '127.0.0.1', { lazyConnect: true });
  await client.connect();
  const store = createRedisStore({ client, clock: 'client', timeoutMs: 2000 });
  return {
    store,
    close: async () => {
      await assertAllKeysExpire(client);
      await store.close();
      client.disconnect();
      await server.stop();
    },
  };
});

runStoreConformance('redis (ioredis, 3-master cluster)', async () => {
  const cluster = await startRedisCluster(3);
  const client = new Cluster(cluster.startupNodes, { lazyConnect: true });
  await client.connect();
  const store = createRedisStore({ client, clock: 'client', timeoutMs: 2000 });
  return {
    store,
    close: async () => {
      await assertAllKeysExpire(client);
      await store.close();
      client.disconnect();
      await cluster.stop();
    },
  };
});

runStoreConformance('redis (node-redis, standalone, no local cache, no batching)', async () => {
  const server = await startRedis();
  const client = createClient({ url: server.url });
  await client.connect();
  const store = createRedisStore({ client, clock: 'client', timeoutMs: 2000, localCache: false, batch: false });
  return {
    store,
    close: async () => {
      await store.close();
      client.destroy();
      await server.stop();
    },
  };
});

// Valkey-compatible clients (AWS ElastiCache and Google Memorystore steer users to them); Redis 7 here.
runStoreConformance('redis (iovalkey, standalone)', async () => {
  const server = await startRedis();
  const client = new Valkey(server.port, '127.0.0.1');
  const store = createRedisStore({ client, clock: 'client', timeoutMs: 2000 });
  await store.ready();
  return {
    store,
    close: async () => {
      await store.close();
      client.disconnect();
      await server.stop();
    },
  };
});

runStoreConformance('redis (valkey-glide, standalone)', async () => {
  Logger.setLoggerConfig('off');
  const server = await startRedis();
  const client = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: server.port }] });
  const store = createRedisStore({ client, clock: 'client', timeoutMs: 2000 });
  await store.ready();
  return {
    store,
    close: async () => {
      await store.close();
      client.close();
      await server.stop();
    },
  };
});
