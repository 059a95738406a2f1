/**
 * The adapter scenario suite again, every framework, with counters in Redis (a redis-server this file
 * starts), and what the middleware answers when that Redis dies: 200 with `X-RateLimit-Degraded: 1`
 * under `fail: 'open'`, 503 with `Retry-After` under `fail: 'closed'`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createManualClock } from '../../src/core/clock.js';
import type { RateLimitOptions } from '../../src/http/index.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import { HARNESSES, holdRequests } from './harness.js';
import { pick, runAdapterSuite, T0 } from './suite.js';

let server: RedisServerHandle;
let client: Redis;
let prefixes = 0;

before(async () => {
  server = await startRedis();
  client = new Redis(server.port, '127.0.0.1', { lazyConnect: true });
  await client.connect();
});

after(async () => {
  client?.disconnect();
  await server?.stop();
});

for (const harness of HARNESSES) {
  runAdapterSuite(harness, 'redis', {
    async create() {
      // A prefix per scenario: scenarios share one Redis but never each other's counters.
      const store = createRedisStore({ client, clock: 'client', timeoutMs: 2000, prefix: `adapters${++prefixes}:` });
      return { store, close: () => store.close() };
    },
  });
}

describe('a dead Redis', () => {
  /** A Redis of its own for each case, killed (SIGKILL) after one good request. */
  async function withDyingRedis(
    fail: 'open' | 'closed' | Partial<RateLimitOptions<unknown>>,
    body: (
      get: (path?: string) => Promise<{ status: number; headers: Headers; body: string }>,
      kill: () => Promise<void>,
    ) => Promise<void>,
  ) {
    const own = await startRedis();
    const c = new Redis(own.port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    c.on('error', () => {});
    await c.connect();
    const store = createRedisStore({ client: c, clock: 'client', timeoutMs: 100 });
    const harness = HARNESSES.find((h) => h.name === 'node:http');
    assert.ok(harness);
    const options = typeof fail === 'string' ? { fail } : fail;
    const running = await harness.start({ limit: 5, period: '1m', store, ...options, clock: createManualClock(T0) });
    try {
      await body(
        async (path = '/') => {
          const res = await fetch(`${running.url}${path}`);
          return { status: res.status, headers: res.headers, body: await res.text() };
        },
        async () => {
          own.kill('SIGKILL');
          await own.stop();
        },
      );
    } finally {
      await running.close();
      await store.close();
      c.disconnect();
      await own.stop();
    }
  }

  it("fail: 'open' lets requests through, marked X-RateLimit-Degraded: 1", () =>
    withDyingRedis('open', async (get, kill) => {
      const ok = await get();
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-ratelimit-degraded'), null);
      await kill();
      for (let i = 0; i < 7; i++) {
        const r = await get();
        assert.equal(r.status, 200, 'more than the limit passes: nobody can count');
        assert.equal(r.headers.get('x-ratelimit-degraded'), '1');
      }
    }));

  it("fail: 'closed' answers 503 with Retry-After", () =>
    withDyingRedis('closed', async (get, kill) => {
      assert.equal((await get()).status, 200);
      await kill();
      const r = await get();
      assert.equal(r.status, 503);
      const headers = pick(r);
      assert.equal(headers['content-type'], 'application/json');
      assert.ok(Number(headers['retry-after']) >= 1);
      assert.equal(headers['x-ratelimit-degraded'], undefined);
      const body = JSON.parse(r.body);
      assert.equal(body.error.code, 'RATE_LIMIT_UNAVAILABLE');
      assert.equal(body.error.retry_after, Number(headers['retry-after']));
    }));

  it("fail: 'insurance' keeps the concurrency limit too: its places are held in-process", () =>
    withDyingRedis({ fail: 'insurance', insuranceShare: 1, concurrency: 1 }, async (get, kill) => {
      assert.equal((await get()).status, 200);
      await kill();
      const hold = holdRequests();
      const first = get('/hold');
      try {
        await hold.arrived;
        const second = await get();
        assert.equal(second.status, 429, 'the one insured place is taken by the request in flight');
        hold.open();
        assert.equal((await first).status, 200);
        assert.equal((await get()).status, 200, 'the place was given back');
      } finally {
        hold.open();
        await first.catch(() => undefined);
      }
    }));
});
