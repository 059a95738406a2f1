/**
 * How the Redis store groups single checks into script calls, counted with stats().commands against a
 * real Redis: a lone check goes out at once; checks that arrive while one is in flight share one call.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createRedisStore } from '../../src/stores/redis/index.js';

describe('Redis store batching', () => {
  const redis = useRedis();
  const policy = resolvePolicy({ limit: 100, period: '1m' });

  it('sends a lone check at once, and batches the checks that arrive while it is in flight', async () => {
    const store = createRedisStore({ client: redis.client, prefix: 'batching-1:', timeoutMs: 2000 });
    // Ready first: until then checks wait for the connection and the scripts, whatever their number.
    await store.ready();
    // Script calls sent since, not counting the ones sent again in full after NOSCRIPT (a fresh Redis).
    const base = store.stats().commands - store.stats().scriptLoads;
    const sent = () => store.stats().commands - store.stats().scriptLoads - base;
    const first = store.check('a', policy, 1, 0, true);
    assert.equal(sent(), 1, 'the first check did not wait for the next loop phase');
    const rest = Array.from({ length: 10 }, (_, i) => store.check(`k${i}`, policy, 1, 0, true));
    assert.equal(sent(), 1, 'the others are queued');
    const decisions = await Promise.all([first, ...rest]);
    assert.ok(decisions.every((d) => d.allowed && d.remaining === 99));
    assert.equal(sent(), 2, 'the ten queued checks went out as one script call');
    // Once nothing is in flight, a check goes out at once again.
    const again = store.check('a', policy, 1, 0, true);
    assert.equal(sent(), 3);
    assert.equal((await again).remaining, 98);
    await store.close();
  });

  it('with batch: false, sends every check on its own', async () => {
    const store = createRedisStore({ client: redis.client, prefix: 'batching-2:', timeoutMs: 2000, batch: false });
    await store.ready();
    const base = store.stats().commands - store.stats().scriptLoads;
    await Promise.all(Array.from({ length: 5 }, (_, i) => store.check(`k${i}`, policy, 1, 0, true)));
    assert.equal(store.stats().commands - store.stats().scriptLoads - base, 5);
    await store.close();
  });
});
