/**
 * Lease ids on the Redis store (issue 37, item 13): a lease is released by its id alone, so ids must not
 * follow from one another. The old ids were `<instance>.<seq base36>`: anyone holding one lease could
 * name the next caller's by adding one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createRedisStore, type RedisStore } from '../../src/stores/redis/index.js';

describe('redis store: lease ids', () => {
  let server: RedisServerHandle;
  let client: Redis;
  let store: RedisStore;
  before(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    store = createRedisStore({ client, timeoutMs: 2000 });
    await store.ready();
  });
  after(async () => {
    await store?.close();
    client?.disconnect();
    await server?.stop();
  });

  it('are 128 random bits: the ids next to mine release nobody else’s lease', async () => {
    const now = Date.now();
    const mine = await store.acquire('job', 10, 60_000, now);
    const theirs = await store.acquire('job', 10, 60_000, now);
    assert.ok(mine.lease && theirs.lease);
    const id = mine.lease.id;
    const dot = id.lastIndexOf('.');
    // Ids next to mine: the last character changed (to one it is not: 128 bits in base64url end in A, Q, g or
    // w, so a fixed 'A' was my own id a quarter of the time), or the old `<ms>.<seq>` form's next sequence numbers.
    const others = [...'ABCD'].filter((c) => c !== id.at(-1)).slice(0, 3);
    const guesses = [1, 2, 3].map((d) =>
      dot === -1
        ? `${id.slice(0, -1)}${others[d - 1]}`
        : `${id.slice(0, dot + 1)}${(Number.parseInt(id.slice(dot + 1), 36) + d).toString(36)}`,
    );
    for (const guess of guesses) {
      if (guess === theirs.lease.id) assert.fail(`the next lease id, ${guess}, follows from ${id}`);
      assert.equal(await store.release({ key: 'job', id: guess, expiresAt: 0 }, now), false);
    }
    assert.equal(await store.release(theirs.lease, now), true, 'their lease was still held');
    assert.equal(await store.release(mine.lease, now), true, 'my lease was still held');
    for (const lease of [mine.lease, theirs.lease]) assert.match(lease.id, /^[A-Za-z0-9_-]{22}$/);
  });
});
