/**
 * Reserve and settle each take one Redis round trip (issue 40), counted by Redis itself (INFO commandstats): a
 * reserve is one script call, a settle under its reservation one (the refund), a settle over it one (the charge, on
 * every limit at once). With the records in Redis (`reservationStore`) each adds the record's own call.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createManualClock } from '../../src/core/clock.js';
import { createLimiter, type Limiter } from '../../src/limiter/create-limiter.js';
import { createRedisReservationRecords, createRedisStore, type RedisStore } from '../../src/stores/redis/index.js';

/** Script calls Redis has run so far (EVALSHA and EVAL), from its own counters. */
export async function scriptCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)) n += Number(m[2]);
  return n;
}

describe('reserve and settle on Redis: round trips', () => {
  let server: RedisServerHandle;
  let client: Redis;
  let admin: Redis;
  let store: RedisStore;
  before(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1');
    admin = new Redis(server.port, '127.0.0.1');
    store = createRedisStore({ client, clock: 'client', timeoutMs: 5000 });
    await store.ready();
  });
  after(async () => {
    await store?.close();
    client?.disconnect();
    admin?.disconnect();
    await server?.stop();
  });

  const limiterWith = (records: boolean): Limiter =>
    createLimiter({
      name: `rt${records}`,
      limits: [
        { name: 'minute', algorithm: 'token-bucket', limit: 1000, period: '1m' },
        { name: 'day', algorithm: 'fixed-window', limit: 10_000, period: '1d' },
      ],
      store,
      clock: createManualClock(1_700_000_000_000),
      ...(records ? { reservationStore: createRedisReservationRecords({ client, name: 'rt' }) } : {}),
    });

  /** Script calls and commands the store sent for `work`. */
  async function counted(work: () => Promise<unknown>): Promise<{ scripts: number; sent: number }> {
    const [scripts, sent] = [await scriptCalls(admin), store.stats().commands];
    await work();
    return { scripts: (await scriptCalls(admin)) - scripts, sent: store.stats().commands - sent };
  }

  it('two limits: a reserve is one call, a settle under or over it one call', async () => {
    const limiter = limiterWith(false);
    let id = '';
    assert.deepEqual(
      await counted(async () => {
        id = (await limiter.reserve('k', { cost: 900 })).id;
      }),
      { scripts: 1, sent: 1 },
      'reserve',
    );
    assert.deepEqual(await counted(() => limiter.settle(id, 1500)), { scripts: 1, sent: 1 }, 'settle over: the charge');
    const under = (await limiter.reserve('k2', { cost: 100 })).id;
    assert.deepEqual(await counted(() => limiter.settle(under, 40)), { scripts: 1, sent: 1 }, 'settle under');
  });

  it('with the records in Redis, each adds the record call', async () => {
    const limiter = limiterWith(true);
    let id = '';
    const reserve = await counted(async () => {
      id = (await limiter.reserve('k3', { cost: 10 })).id;
    });
    // The record calls go through the records' own client calls, not the store: scripts counts them.
    assert.equal(reserve.sent, 1);
    assert.ok(reserve.scripts >= 2 && reserve.scripts <= 3, `reserve: ${reserve.scripts} script calls`);
    const settle = await counted(() => limiter.settle(id, 30));
    assert.equal(settle.sent, 1);
    assert.ok(settle.scripts >= 2 && settle.scripts <= 3, `settle: ${settle.scripts} script calls`);
  });
});
