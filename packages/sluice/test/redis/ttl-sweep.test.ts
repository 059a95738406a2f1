/**
 * No key without a TTL: a workload over every algorithm and operation (checks, peeks, multi-limit
 * checks, refunds, resets, blocks, leases), on both clocks, then SCAN + PTTL over the whole Redis.
 * Also: a rejected request writes nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { ALGORITHMS, isBucketAlgorithm, resolvePolicy } from '../../src/core/policy.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import { keysWithoutTtl } from './ttl-check.js';

describe('TTL sweep', () => {
  const redis = useRedis();

  it('leaves no sluice key without a TTL', async () => {
    const { client } = redis;
    for (const clock of ['server', 'client'] as const) {
      const store = createRedisStore({ client, clock, prefix: `ttl-${clock}:`, timeoutMs: 2000 });
      const now = Date.now();
      for (const algorithm of ALGORITHMS) {
        const p = resolvePolicy({
          algorithm,
          limit: 3,
          period: '1s',
          blockDuration: '2s',
          ...(isBucketAlgorithm(algorithm) ? { burst: 4 } : {}),
        });
        const q = resolvePolicy({ algorithm, limit: 2, period: '5s' });
        for (let i = 0; i < 6; i++) {
          await store.check(`k:${algorithm}`, p, 1, now + i, true);
          await store.check(`k:${algorithm}`, q, 2, now + i, i % 2 === 0);
          await store.checkMany(
            [
              { key: `m:${algorithm}`, policy: p, cost: 1 },
              { key: `n:${algorithm}`, policy: q, cost: 1 },
            ],
            now + i,
            true,
          );
        }
        await store.refund(`k:${algorithm}`, q, 1, now + 10);
        await store.refund(`k:${algorithm}`, p, 5, now + 10);
        await store.refund(`never-seen:${algorithm}`, p, 1, now + 10);
        await store.reset(`m:${algorithm}`, p);
      }
      const lease = await store.acquire('lease', 2, 5000, now);
      await store.acquire('lease', 2, 5000, now);
      if (lease.lease) await store.release(lease.lease, now + 1);
      await store.close();
    }
    const { seen, missing } = await keysWithoutTtl(client);
    assert.ok(seen > 30, `${seen} keys scanned`);
    assert.deepEqual(missing, []);
  });

  it('a rejected request writes nothing', async () => {
    const { client } = redis;
    const store = createRedisStore({ client, prefix: 'rejected:', localCache: false, timeoutMs: 2000 });
    // Keys under this store's prefix only: keys of the tests before may expire meanwhile (dbsize would
    // then drop on a slow machine).
    const count = async () => (await client.keys('rejected:*')).length;
    const before = await count();
    for (const algorithm of ALGORITHMS) {
      const zero = resolvePolicy({ algorithm, limit: 0, period: '1m' });
      const one = resolvePolicy({ algorithm, limit: 1, period: '1m' });
      for (let i = 0; i < 20; i++) {
        assert.equal((await store.check(`flood:${i}`, zero, 1, 0, true)).allowed, false);
        assert.equal((await store.check(`flood:${i}`, one, 2, 0, true)).allowed, false);
        const many = await store.checkMany(
          [
            { key: `a:${i}`, policy: one, cost: 1 },
            { key: `b:${i}`, policy: zero, cost: 1 },
          ],
          0,
          true,
        );
        assert.equal(many[1]?.allowed, false);
      }
    }
    assert.equal(await count(), before);
    await store.close();
  });
});
