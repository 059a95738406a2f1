/**
 * A stalled event loop against a healthy Redis: 64 checks in flight, then a synchronous 200 ms
 * busy-wait (a GC pause, a large JSON body, a config reload) — four times the command timeout. The
 * replies arrive during the stall; when the loop resumes, its timers run before it reads the sockets.
 * None of these checks may count as timed out, nor be decided by the failure policy.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createRedisStore } from '../../src/stores/redis/index.js';

function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Synchronous on purpose: nothing else runs in this process meanwhile.
  }
}

describe('a stalled event loop with checks in flight', () => {
  const redis = useRedis();

  for (const batch of [true, false]) {
    it(`64 checks, 200 ms busy-wait: zero timeouts, zero degraded (batch: ${batch})`, async () => {
      // The default command timeout (50 ms): the stall is four times longer.
      const store = createRedisStore({ client: redis.client, batch, prefix: `stall${batch}:` });
      const single = createLimiter({ algorithm: 'token-bucket', limit: 1000, period: '1m', store, fail: 'closed' });
      const multi = createLimiter({
        store,
        fail: 'closed',
        limits: [
          { name: 'ip', limit: 1000, period: '1m' },
          { name: 'user', limit: 1000, period: '1h', algorithm: 'gcra' },
        ],
      });
      // Connected, and the scripts cached in Redis: what follows measures only the stall.
      await Promise.all([single.check('warm'), multi.check('warm')]);
      const inFlight = Array.from({ length: 64 }, (_, i) =>
        i % 2 === 0 ? single.check(`k${i % 8}`) : multi.check(`m${i % 8}`),
      );
      // The store sends in the check phase (setImmediate); once it has, the commands are in flight: stall.
      await new Promise((resolve) => setImmediate(resolve));
      const sent = store.stats().commands;
      assert.ok(sent > 0, 'the commands were sent before the stall');
      busyWait(200);
      const decisions = await Promise.all(inFlight);
      assert.equal(store.stats().timeouts, 0, 'no command counted as timed out');
      assert.deepEqual(
        decisions.filter((d) => d.degraded || !d.allowed),
        [],
        'every check decided by Redis, and allowed',
      );
      await store.close();
    });
  }
});
