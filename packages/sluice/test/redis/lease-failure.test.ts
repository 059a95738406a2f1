/**
 * The concurrency limiter on a Redis that went away: each failure policy answers, as for the other
 * limiters, marked `degraded` — and releases of the leases it handed out never reach the store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createConcurrencyLimiter } from '../../src/limiter/concurrency-limiter.js';
import { createRedisStore, type RedisStore } from '../../src/stores/redis/index.js';

describe('concurrency limiter: failure policies when Redis is down', () => {
  let server: RedisServerHandle;
  let client: Redis;
  let store: RedisStore;
  before(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    client.on('error', () => {});
    store = createRedisStore({ client, timeoutMs: 2000 });
    await store.ready();
  });
  after(async () => {
    await store?.close();
    client?.disconnect();
    await server?.stop();
  });

  it('acquires through Redis while it is up; then open, closed and insurance answer', async () => {
    const open = createConcurrencyLimiter({ limit: 4, store, fail: 'open' });
    const closed = createConcurrencyLimiter({ limit: 4, store, fail: 'closed' });
    const insured = createConcurrencyLimiter({ limit: 4, store, fail: 'insurance', insuranceShare: 0.5 });
    const up = await closed.acquire('job');
    assert.equal(up.degraded, undefined);
    assert.ok(up.lease);

    await server.stop();
    while (client.status === 'ready') await new Promise((r) => setTimeout(r, 5));

    const o = await open.acquire('job');
    assert.deepEqual([o.allowed, o.degraded], [true, true]);
    assert.ok(o.lease, 'an open decision carries a lease, so callers release it as usual');
    assert.equal(await open.release(o.lease), true, 'released without the store');

    const c = await closed.acquire('job');
    assert.deepEqual([c.allowed, c.reason, c.degraded], [false, 'store-unavailable', true]);
    assert.equal(await closed.release(up.lease), false, 'a release the store cannot take is dropped');

    // Insurance: this process's share (2 of 4) held in memory until Redis is back.
    const held = [await insured.acquire('job'), await insured.acquire('job'), await insured.acquire('job')];
    assert.deepEqual(
      held.map((d) => [d.allowed, d.degraded]),
      [
        [true, true],
        [true, true],
        [false, true],
      ],
    );
    assert.equal(await insured.release(held[0]?.lease as never), true);
    assert.equal((await insured.acquire('job')).allowed, true, 'the released place is free again');
  });

  it('validates fail and insuranceShare as createLimiter does', () => {
    assert.throws(() => createConcurrencyLimiter({ limit: 1, fail: 'maybe' as never }), { option: 'fail' });
    assert.throws(() => createConcurrencyLimiter({ limit: 1, fail: 'open', insuranceShare: 0.5 }), {
      option: 'insuranceShare',
    });
  });
});
