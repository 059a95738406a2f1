/**
 * The store conformance suite, unchanged, on the multi-region store — one region's view. Eventual
 * mode with three regions configured (the others silent, so this region's view is the whole count)
 * takes the counter algorithms; escrow mode with this region holding the whole limit takes every one.
 */

import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startRedis } from '../../../../test/helpers/redis-server.js';
import { createMultiRegionStore } from '../../src/stores/multi-region/index.js';
import { keysWithoutTtl } from '../redis/ttl-check.js';
import { runStoreConformance } from '../stores/suite.js';

async function threeRegions(mode: 'eventual' | 'escrow', count: number) {
  const servers = await Promise.all(Array.from({ length: count }, () => startRedis()));
  const clients = servers.map((s) => new Redis(s.port, '127.0.0.1'));
  const names = ['eu', 'us', 'ap'].slice(0, count);
  const store = createMultiRegionStore({
    region: 'eu',
    regions: Object.fromEntries(names.map((n, i) => [n, clients[i] as Redis])),
    mode,
    timeoutMs: 2000,
    syncIntervalMs: 50,
  });
  return {
    store,
    close: async () => {
      await store.close();
      const { seen, missing } = await keysWithoutTtl(clients[0] as Redis);
      assert.ok(seen > 0, 'the suite wrote keys');
      assert.deepEqual(missing, [], 'keys without a TTL');
      for (const c of clients) c.disconnect();
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
}

runStoreConformance('multi-region eventual (region eu of 3)', () => threeRegions('eventual', 3), {
  algorithms: ['fixed-window', 'sliding-window'],
});
runStoreConformance('multi-region escrow (one region)', () => threeRegions('escrow', 1));
