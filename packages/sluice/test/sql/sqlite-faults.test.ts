/**
 * sluice/sqlite against what goes wrong, on temporary files: hostile keys, a missing table, a read-only database,
 * another connection holding the write lock past lockTimeoutMs (the limiter's failure policy answers), a flood of
 * keys, the database's clock, and any object that is not a database refused.
 */
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { isSluiceError } from '../../src/core/errors.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createSqliteStore } from '../../src/stores/sql/sqlite.js';
import { SQLITE_BUSY_BACKOFF_MS } from '../../src/stores/sql/sqlite-backend.js';
import { checkFailurePolicies, checkHostileKeys, HOSTILE_KEYS } from './store-faults.js';

const dir = mkdtempSync(join(tmpdir(), 'sluice-sqlite-faults-'));
const file = join(dir, 'limits.db');
const db = new Database(file);
const count = (sql: string) => Number((db.prepare(sql).get() as { n: number }).n);

after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('sqlite store: faults and bounds', () => {
  it('stores hostile keys apart and safely: SQL-looking, NUL and lone surrogates, 1 MB long', async () => {
    const store = createSqliteStore({ db, table: 'hostile' });
    await checkHostileKeys(store);
    assert.ok(count('SELECT max(length(id)) AS n FROM hostile') <= 512, 'ids are bounded');
    assert.equal(count('SELECT count(*) AS n FROM hostile'), HOSTILE_KEYS.length);
  });

  it('a missing table with createTable: false is ERR_SLUICE_STORE_TABLE_MISSING naming the migration', async () => {
    const store = createSqliteStore({ db, table: 'absent', createTable: false });
    await assert.rejects(
      store.ready(),
      (e: unknown) => isSluiceError(e, 'ERR_SLUICE_STORE_TABLE_MISSING') && /CREATE TABLE/.test(e.message),
    );
  });

  it('a read-only database is ERR_SLUICE_STORE_PERMISSION saying to open it read-write', async () => {
    const readonly = new Database(file, { readonly: true });
    try {
      const store = createSqliteStore({ db: readonly, table: 'hostile', createTable: false });
      await assert.rejects(
        store.ready(),
        (e: unknown) => isSluiceError(e, 'ERR_SLUICE_STORE_PERMISSION') && /read-write/.test(e.message),
      );
    } finally {
      readonly.close();
    }
  });

  it('another connection holding the write lock: the decision times out and the limiter fails open or closed', async () => {
    const store = createSqliteStore({ db, table: 'locked', lockTimeoutMs: 20 });
    await store.ready();
    const holder = new Database(file);
    try {
      holder.exec('BEGIN IMMEDIATE');
      await assert.rejects(
        async () => store.check('stuck', resolvePolicy({ limit: 1, period: '1h' }), 1, Date.now(), true),
        (e: unknown) => isSluiceError(e, 'ERR_SLUICE_STORE_TIMEOUT'),
      );
      await checkFailurePolicies(store);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
  });

  it('a lock held by another process: after one decision waited in vain, the next ones do not block for a back-off', async () => {
    // What each decision was allowed to block the event loop for: busy_timeout when it asked for the lock.
    let busyTimeout = -1;
    const waits: number[] = [];
    const watched = {
      prepare: (sql: string) => db.prepare(sql),
      exec(sql: string) {
        const pragma = /^PRAGMA busy_timeout = (\d+)$/.exec(sql);
        if (pragma !== null) busyTimeout = Number(pragma[1]);
        if (sql === 'BEGIN IMMEDIATE') waits.push(busyTimeout);
        return db.exec(sql);
      },
    };
    const store = createSqliteStore({ db: watched, table: 'backoff', lockTimeoutMs: 30 });
    await store.ready();
    const p = resolvePolicy({ limit: 3, period: '1h' });
    const t0 = Date.now();
    const check = (atMs: number) => store.check('k', p, 1, atMs, true);
    const holder = new Database(file);
    try {
      holder.exec('BEGIN IMMEDIATE');
      for (const atMs of [t0, t0 + 1, t0 + 500, t0 + SQLITE_BUSY_BACKOFF_MS - 1])
        await assert.rejects(
          async () => check(atMs),
          (e: unknown) => isSluiceError(e, 'ERR_SLUICE_STORE_TIMEOUT'),
        );
      assert.deepEqual(waits, [30, 0, 0, 0], 'only the first decision waited for the lock');
      // Past the back-off, one decision waits again (the lock may be about to be free), and a new back-off starts.
      await assert.rejects(async () => check(t0 + SQLITE_BUSY_BACKOFF_MS));
      await assert.rejects(async () => check(t0 + SQLITE_BUSY_BACKOFF_MS + 1));
      assert.deepEqual(waits.slice(4), [30, 0]);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    // The lock free again: the next decision (inside the back-off) gets it and ends the back-off; counts are exact.
    const remaining = [];
    for (let i = 0; i < 4; i++) remaining.push(await check(t0 + SQLITE_BUSY_BACKOFF_MS + 2));
    assert.deepEqual(
      remaining.map((d) => d.allowed),
      [true, true, true, false],
    );
    assert.deepEqual(waits.slice(6), [0, 30, 30, 30]);
  });

  it('a flood of keys: rejections leave no row, and expired rows are swept', async () => {
    const store = createSqliteStore({ db, table: 'flood', clock: 'client', sweepEvery: 100 });
    const p = resolvePolicy({ limit: 0, period: '1s' });
    const q = resolvePolicy({ limit: 5, period: '1s' });
    const t0 = Date.now();
    for (let i = 0; i < 300; i++) await store.check(`zero:${i}`, p, 1, t0, true);
    assert.equal(count('SELECT count(*) AS n FROM flood'), 0, 'a rejected request keeps nothing');
    for (let i = 0; i < 300; i++) await store.check(`k:${i}`, q, 1, t0 + i * 10, true);
    // The background sweeps on the 100th, 200th and 300th write deleted the rows whose second had passed.
    await new Promise((resolve) => setImmediate(resolve));
    const left = count('SELECT count(*) AS n FROM flood');
    assert.ok(left < 300, `rows left ${left}`);
  });

  it("decides on the database's clock by default, whatever the caller's", async () => {
    const store = createSqliteStore({ db, table: 'clock' });
    const p = resolvePolicy({ limit: 1, period: '1h' });
    assert.equal((await store.check('clock', p, 1, 0, true)).allowed, true);
    assert.equal((await store.check('clock', p, 1, Date.now() + 10 * 365 * 86_400_000, true)).allowed, false);
  });

  it('anything but a database is ERR_SLUICE_INVALID_STORE', () => {
    assert.throws(
      () => createSqliteStore({ db: { query() {} } }),
      (e: unknown) => isSluiceError(e, 'ERR_SLUICE_INVALID_STORE'),
    );
  });
});
