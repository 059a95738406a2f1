/**
 * The multi-region store on Redis Cluster: this region's Redis is a three-master cluster, the other
 * region's a single server. `checkMany` over keys in different hash slots checks each slot at once
 * and, when one rejects, refunds the ones that passed — all or nothing, as the Redis store does on a
 * Cluster — and the sync loop writes to a cluster peer slot by slot.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import {
  type RedisClusterHandle,
  type RedisServerHandle,
  startRedis,
  startRedisCluster,
} from '../../../../test/helpers/redis-server.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createMultiRegionStore } from '../../src/stores/multi-region/index.js';
import { slotOf, tagOf } from '../../src/stores/redis/keys.js';
import { scriptsRun } from './harness.js';

describe('multi-region on Redis Cluster', { timeout: 60_000 }, () => {
  let cluster: RedisClusterHandle;
  let single: RedisServerHandle;
  let eu: Cluster;
  let us: Redis;
  let euFromUs: Cluster;
  before(async () => {
    cluster = await startRedisCluster(3);
    single = await startRedis();
    eu = new Cluster(cluster.startupNodes);
    euFromUs = new Cluster(cluster.startupNodes);
    us = new Redis(single.port, '127.0.0.1');
    // Every node answers (slots known) before the first check.
    await Promise.all([eu, euFromUs].map((c) => new Promise((resolve) => c.once('ready', resolve))));
    await Promise.all([eu, euFromUs].map((c) => Promise.all(c.nodes('master').map((n) => n.ping()))));
  });
  after(async () => {
    eu?.disconnect();
    euFromUs?.disconnect();
    us?.disconnect();
    await cluster?.stop();
    await single?.stop();
  });

  for (const mode of ['eventual', 'escrow'] as const) {
    it(`${mode}: checkMany across slots is all or nothing, and the sync reaches a cluster peer`, async () => {
      const prefix = `c:${mode}:`;
      const keys = ['alpha', 'bravo', 'charlie'];
      assert.equal(new Set(keys.map((k) => slotOf(tagOf(prefix, k)))).size, 3, 'three slots');
      const store = createMultiRegionStore({
        region: 'eu',
        regions: { eu, us },
        mode,
        prefix,
        autoSync: false,
        // Generous: the full suite runs this on a loaded machine (the default is 50 ms).
        timeoutMs: 10_000,
      });
      const peer = createMultiRegionStore({
        region: 'us',
        regions: { eu: euFromUs, us },
        mode,
        prefix,
        autoSync: false,
        timeoutMs: 10_000,
      });
      // This region's share (escrow: half of the limit) or view (eventual: all of it): 2, 2 and 1.
      const scale = mode === 'escrow' ? 2 : 1;
      const policies = [2, 2, 1].map((n) =>
        resolvePolicy({ algorithm: 'fixed-window', limit: n * scale, period: 60_000 }),
      );
      const items = keys.map((key, i) => ({ key, policy: policies[i] as (typeof policies)[number], cost: 1 }));
      const now = 1_800_000_000_000;
      try {
        const first = await store.checkMany(items, now, true);
        assert.deepEqual(
          first.map((d) => d.allowed),
          [true, true, true],
        );
        // charlie is spent: the next batch is rejected as a whole, and alpha and bravo get their unit back.
        const second = await store.checkMany(items, now, true);
        assert.deepEqual(
          second.map((d) => d.allowed),
          [true, true, false],
        );
        for (const [i, key] of ['alpha', 'bravo'].entries()) {
          const look = await store.check(key, policies[i] as (typeof policies)[number], 0, now, false);
          assert.equal(look.remaining, 1, `${key} was refunded`);
        }
        // The sync writes into the other region's Redis and reads back from a cluster, slot by slot
        // (escrow: the records asking for units are pushed; eventual: every count). A push that only
        // PINGs would count as synced: the scripts run at the peer are counted too.
        const usScripts = await scriptsRun([us]);
        await store.sync();
        assert.ok((await scriptsRun([us])) > usScripts, 'eu (a cluster) merged into us');
        const euScripts = await scriptsRun(eu.nodes('master'));
        await peer.check('alpha', policies[0] as (typeof policies)[number], 1, now, true);
        await peer.sync();
        assert.ok((await scriptsRun(eu.nodes('master'))) > euScripts, 'us merged into eu (a cluster)');
        for (const s of [store, peer]) {
          for (const status of s.syncStatus()) assert.equal(status.failures, 0, `${s.region} → ${status.region}`);
          assert.ok(s.syncStatus().every((x) => x.pushes > 0));
        }
        if (mode === 'escrow') {
          // A record of us's that moved no units and asks for nothing (bravo: no demand in us) is not
          // sent: a sync only finds out that the peer is there (a PING, routed by the record's key),
          // with no failure, and it counts as a push.
          const before = peer.syncStatus()[0]?.pushes ?? 0;
          for (let i = 0; i < 4; i++) {
            await peer.check('bravo', policies[1] as (typeof policies)[number], 0, now, true);
            await peer.sync();
          }
          const after = peer.syncStatus()[0];
          assert.equal(after?.failures, 0);
          assert.equal(after?.pushes, before + 4);
        }
        if (mode === 'eventual') {
          // us counted its own unit and eu's: alpha is spent in both views.
          const inUs = await peer.check('alpha', policies[0] as (typeof policies)[number], 0, now, false);
          assert.equal(inUs.remaining, 0);
        }
      } finally {
        await store.close();
        await peer.close();
      }
    });
  }
});
