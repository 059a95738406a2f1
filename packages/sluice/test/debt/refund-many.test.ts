/**
 * A settle under its reservation gives back on every limit in one call (Store.refundMany, issue 40): on memory,
 * SQLite and PostgreSQL (one transaction through the kit) the two limits of a limiter hold exactly the actual cost.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createManualClock } from '../../src/core/clock.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createPostgresStore } from '../../src/stores/sql/postgres.js';
import { createSqliteStore } from '../../src/stores/sql/sqlite.js';
import type { Store } from '../../src/stores/store.js';

const dir = mkdtempSync(join(tmpdir(), 'sluice-refund-many-'));
const db = new Database(join(dir, 'limits.db'));
const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 2 });
const table = `sluice_refund_many_${process.pid}`;
after(async () => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.end();
});

const stores: [string, () => Store][] = [
  ['memory', () => createMemoryStore({ sweepIntervalMs: 0 })],
  ['SQLite', () => createSqliteStore({ db, table: 'refund_many', clock: 'client', sweepEvery: 0 })],
  ['PostgreSQL', () => createPostgresStore({ client: pool, table, clock: 'client', localCache: false })],
];

describe('settle under its reservation: every limit gets the difference back', () => {
  for (const [name, make] of stores) {
    it(name, async () => {
      const store = make();
      await store.ready?.();
      assert.equal(typeof store.refundMany, 'function');
      const limiter = createLimiter({
        limits: [
          { name: 'minute', limit: 100, period: '1m' },
          { name: 'hour', algorithm: 'token-bucket', limit: 1000, period: '1h' },
        ],
        store,
        clock: createManualClock(1_700_000_000_000),
      });
      const r = await limiter.reserve(`k-${process.pid}`, { cost: 50 });
      assert.ok((await r.settle(20)).ok);
      const left = await limiter.peek(`k-${process.pid}`, { cost: 0 });
      assert.deepEqual(
        left.results?.map((x) => x.decision.remaining),
        [80, 980],
      );
    });
  }
});
