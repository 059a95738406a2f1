/**
 * A refund carries the time its units were taken (`takenAtMs`), and gives them back only to the window that counted
 * them: one given after the window rolled frees nothing in the new window, and a sliding log removes the refunded
 * request's own entry, not a later one's. On the memory store, the Redis store (client clock: the test drives time)
 * and the SQL kit (SQLite), with injected times.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { type AlgorithmName, resolvePolicy } from '../../src/core/policy.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import { createSqliteStore } from '../../src/stores/sql/sqlite.js';
import type { Store } from '../../src/stores/store.js';

/** The start of a window of every period used here. */
const W = 1_700_000_000_000;

type StoreUnderTest = { store: Store; close(): Promise<void> };

const redis = useRedis();

const STORES: Record<string, () => Promise<StoreUnderTest>> = {
  memory: async () => {
    const store = createMemoryStore({ sweepIntervalMs: 0 });
    return { store, close: () => store.close() };
  },
  'redis (client clock)': async () => {
    const store = createRedisStore({ client: redis.client, clock: 'client', timeoutMs: 5000 });
    return { store, close: () => store.close() };
  },
  'sqlite (store kit)': async () => {
    const db = new Database(':memory:');
    const store = createSqliteStore({ db, table: 'refunds', clock: 'client', sweepEvery: 0 });
    await store.ready();
    return {
      store,
      close: async () => {
        await store.close();
        db.close();
      },
    };
  },
};

let keys = 0;

for (const [name, open] of Object.entries(STORES)) {
  describe(`refunds across windows: ${name}`, () => {
    let s: StoreUnderTest;
    before(async () => {
      s = await open();
    });
    after(() => s?.close());

    const policy = (algorithm: AlgorithmName) => resolvePolicy({ algorithm, limit: 2, period: 1000 });
    const allowed = async (key: string, algorithm: AlgorithmName, at: number) =>
      (await s.store.check(key, policy(algorithm), 1, at, true)).allowed;

    for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
      it(`${algorithm}: a refund of units taken in an ended window frees nothing in the current one`, async () => {
        const key = `k${++keys}`;
        assert.ok(await allowed(key, algorithm, W + 900), 'the slow request, charged in window 0');
        // Window 2: the slow request's window weighs nothing any more (for the sliding window too).
        assert.ok(await allowed(key, algorithm, W + 2050));
        assert.ok(await allowed(key, algorithm, W + 2060));
        await s.store.refund(key, policy(algorithm), 1, W + 2100, W + 900);
        assert.equal(await allowed(key, algorithm, W + 2100), false, 'a third request in window 2');
      });

      it(`${algorithm}: a refund in the window that took the units gives them back`, async () => {
        const key = `k${++keys}`;
        assert.ok(await allowed(key, algorithm, W + 100));
        assert.ok(await allowed(key, algorithm, W + 200));
        await s.store.refund(key, policy(algorithm), 1, W + 500, W + 100);
        assert.ok(await allowed(key, algorithm, W + 500), 'the refunded unit is free again');
        assert.equal(await allowed(key, algorithm, W + 510), false);
      });
    }

    it('fixed-window: a refund after the window rolled is not taken from the new window', async () => {
      const key = `k${++keys}`;
      assert.ok(await allowed(key, 'fixed-window', W + 900));
      assert.ok(await allowed(key, 'fixed-window', W + 1050));
      assert.ok(await allowed(key, 'fixed-window', W + 1060));
      await s.store.refund(key, policy('fixed-window'), 1, W + 1100, W + 900);
      assert.equal(await allowed(key, 'fixed-window', W + 1100), false, 'a third request in window 1');
    });

    it('sliding-window: a refund after the window rolled lowers the previous window, not the current one', async () => {
      const key = `k${++keys}`;
      assert.ok(await allowed(key, 'sliding-window', W + 900));
      assert.ok(await allowed(key, 'sliding-window', W + 1000));
      await s.store.refund(key, policy('sliding-window'), 1, W + 1100, W + 900);
      assert.ok(await allowed(key, 'sliding-window', W + 1100));
      // Window 1 holds two requests: at the start of window 2 they weigh in full.
      const next = await s.store.check(key, policy('sliding-window'), 1, W + 2000, false);
      assert.equal(next.remaining, 0);
      assert.equal(next.allowed, false);
    });

    it("sliding-log: a refund removes the refunded request's own entry, not a later request's", async () => {
      const key = `k${++keys}`;
      assert.ok(await allowed(key, 'sliding-log', W + 0), 'the request that fails');
      assert.ok(await allowed(key, 'sliding-log', W + 500));
      await s.store.refund(key, policy('sliding-log'), 1, W + 600, W + 0);
      assert.ok(await allowed(key, 'sliding-log', W + 600));
      // The window (W+100, W+1100] holds the requests at W+500 and W+600.
      assert.equal(await allowed(key, 'sliding-log', W + 1100), false);
      // …until the one at W+500 leaves it.
      assert.ok(await allowed(key, 'sliding-log', W + 1501));
    });

    it('sliding-log: a refund of units whose window has passed gives nothing back', async () => {
      const key = `k${++keys}`;
      assert.ok(await allowed(key, 'sliding-log', W + 0));
      assert.ok(await allowed(key, 'sliding-log', W + 1500));
      assert.ok(await allowed(key, 'sliding-log', W + 1600));
      await s.store.refund(key, policy('sliding-log'), 1, W + 1700, W + 0);
      assert.equal(await allowed(key, 'sliding-log', W + 1700), false);
    });

    it('a refund without takenAtMs gives back at its own time, as before', async () => {
      const key = `k${++keys}`;
      assert.ok(await allowed(key, 'sliding-log', W + 0));
      assert.ok(await allowed(key, 'sliding-log', W + 10));
      await s.store.refund(key, policy('sliding-log'), 1, W + 20);
      assert.ok(await allowed(key, 'sliding-log', W + 20));
    });
  });
}
