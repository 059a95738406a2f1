/**
 * Debt on every store (issue 40): a charge past the limit delays later requests exactly as the algorithm says, and
 * every store — memory, Redis, PostgreSQL and SQLite through the kit, remote (a real `sluice serve`, op `charge`) —
 * decides the same (all on the client clock: the test drives time).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import pg from 'pg';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { startSluice } from '../../../server/test/integration/helpers.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import { createRemoteStore } from '../../src/stores/remote/index.js';
import { createPostgresStore } from '../../src/stores/sql/postgres.js';
import { createSqliteStore } from '../../src/stores/sql/sqlite.js';
import type { Store } from '../../src/stores/store.js';
import { assertDebtSemantics, debtPolicies, memoryDebt, runDebt, T0 } from './debt-scenario.js';

describe('debt: the memory store', () => {
  for (const policy of debtPolicies()) {
    it(`${policy.algorithm}: charged past the limit, refused until the debt is paid, to the millisecond`, async () => {
      assertDebtSemantics(await memoryDebt(policy), policy.algorithm);
    });
  }

  it('a charge never takes a key further than MAX_DEBT, and 1e15 units stay exact', async () => {
    const store = createMemoryStore({ sweepIntervalMs: 0 });
    for (const policy of debtPolicies()) {
      const [d] = store.charge([{ key: 'huge', policy, cost: 1e15 }], T0);
      assert.equal(d?.allowed, false, policy.algorithm);
      assert.ok(Number.isFinite(d?.retryAfterMs) && (d?.retryAfterMs ?? 0) > 0, policy.algorithm);
      assert.equal(d?.remaining, 0);
    }
    await store.close();
  });

  it('a charge of several items is one step: both keys owe', () => {
    const store = createMemoryStore({ sweepIntervalMs: 0 });
    const [a, b] = debtPolicies();
    const ds = store.charge(
      [
        { key: 'x', policy: a as never, cost: 12 },
        { key: 'y', policy: b as never, cost: 3 },
      ],
      T0,
    );
    assert.deepEqual(
      ds.map((d) => d.allowed),
      [false, true],
    );
    assert.equal(store.check('y', b as never, 7, T0, false).allowed, true);
    assert.equal(store.check('y', b as never, 8, T0, false).allowed, false);
  });
});

/** Every store but memory, each asked to make the memory store's decisions. */
function sameAsMemory(name: string, open: () => Promise<{ store: Store; close: () => Promise<void> }>): void {
  describe(`debt: ${name} decides as the memory store`, () => {
    let store: Store;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, close } = await open());
      await store.ready?.();
    });
    after(async () => {
      await close?.();
    });
    for (const policy of debtPolicies()) {
      it(policy.algorithm, async () => {
        const key = `debt:${policy.algorithm}:${process.pid}:${Date.now()}`;
        assert.deepEqual(await runDebt(store, policy, key), await memoryDebt(policy));
      });
    }
  });
}

let redis: RedisServerHandle | undefined;
const redisPort = async () => {
  redis ??= await startRedis();
  return redis.port;
};
after(async () => {
  await redis?.stop();
});

sameAsMemory('Redis (client clock)', async () => {
  const client = new Redis(await redisPort(), '127.0.0.1');
  const store = createRedisStore({ client, clock: 'client', timeoutMs: 5000 });
  return {
    store,
    close: async () => {
      await store.close();
      client.disconnect();
    },
  };
});

sameAsMemory('PostgreSQL', async () => {
  const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 2 });
  const table = `sluice_debt_${process.pid}`;
  const store = createPostgresStore({ client: pool, table, clock: 'client', timeoutMs: 10_000, localCache: false });
  return {
    store,
    close: async () => {
      await store.close();
      await pool.query(`DROP TABLE IF EXISTS ${table}`);
      await pool.end();
    },
  };
});

sameAsMemory('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-debt-'));
  const db = new Database(join(dir, 'limits.db'));
  const store = createSqliteStore({ db, table: 'debt', clock: 'client', sweepEvery: 0 });
  return {
    store,
    close: async () => {
      await store.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

sameAsMemory('remote (sluice serve, op charge)', async () => {
  const service = await startSluice(['--client-clock']);
  const store = createRemoteStore({ url: `http://127.0.0.1:${service.http}`, clock: 'client', timeoutMs: 5000 });
  return {
    store,
    close: async () => {
      await store.close();
      await service.stop();
    },
  };
});
