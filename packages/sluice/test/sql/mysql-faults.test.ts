/**
 * sluice/mysql against what goes wrong, on the local MariaDB: hostile keys, a missing table, a user without rights,
 * a lock held past the timeout (the limiter's failure policy answers), a flood of keys, and the database's clock.
 */
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { isSluiceError } from '../../src/core/errors.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createMySqlStore } from '../../src/stores/sql/mysql.js';
import { checkFailurePolicies, checkHostileKeys, HOSTILE_KEYS } from './store-faults.js';

const connection = { host: '127.0.0.1', port: 3306, user: 'root', database: 'test' };
const pool = mysql.createPool({ ...connection, connectionLimit: 4 });
const table = `sluice_faults_${process.pid}`;
const user = `sluice_u${process.pid}`;
const count = async (sql: string) => Number(((await pool.query(sql))[0] as { n: unknown }[])[0]?.n);

after(async () => {
  for (const t of [table, `${table}_flood`]) await pool.query(`DROP TABLE IF EXISTS ${t}`);
  await pool.query(`DROP USER IF EXISTS '${user}'@'%', '${user}'@'localhost'`);
  await pool.end();
});

describe('mysql store: faults and bounds', () => {
  it('stores hostile keys apart and safely: SQL-looking, NUL and lone surrogates, 1 MB long', async () => {
    const store = createMySqlStore({ client: pool, table, timeoutMs: 5000 });
    await store.ready();
    await checkHostileKeys(store);
    assert.ok((await count(`SELECT max(length(id)) AS n FROM ${table}`)) <= 512, 'ids are bounded');
    assert.equal(await count(`SELECT count(*) AS n FROM ${table}`), HOSTILE_KEYS.length);
  });

  it('a missing table with createTable: false is ERR_SLUICE_STORE_TABLE_MISSING naming the migration', async () => {
    const store = createMySqlStore({ client: pool, table: `${table}_absent`, createTable: false });
    await assert.rejects(
      store.ready(),
      (e: unknown) => isSluiceError(e, 'ERR_SLUICE_STORE_TABLE_MISSING') && /CREATE TABLE/.test(e.message),
    );
  });

  it('a user without rights is ERR_SLUICE_STORE_PERMISSION naming the GRANT', async () => {
    await pool.query(`CREATE USER IF NOT EXISTS '${user}'@'%'`);
    await pool.query(`CREATE USER IF NOT EXISTS '${user}'@'localhost'`);
    const limited = mysql.createPool({ host: connection.host, port: connection.port, user, connectionLimit: 1 });
    try {
      const store = createMySqlStore({ client: limited, table: `test.${table}`, createTable: false });
      await assert.rejects(
        store.ready(),
        (e: unknown) => isSluiceError(e, 'ERR_SLUICE_STORE_PERMISSION') && /GRANT/.test(e.message),
      );
    } finally {
      await limited.end();
    }
  });

  it('a decision stuck behind a lock times out, and the limiter fails open or closed as told', async () => {
    const store = createMySqlStore({ client: pool, table, timeoutMs: 150 });
    await store.ready();
    const holder = await pool.getConnection();
    try {
      // Another transaction holds every row and gap of the table: each decision waits past timeoutMs.
      await holder.query('START TRANSACTION');
      await holder.query(`SELECT * FROM ${table} FOR UPDATE`);
      await checkFailurePolicies(store);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it('a flood of keys: rejections leave no row, and expired rows are swept', async () => {
    const flood = `${table}_flood`;
    const store = createMySqlStore({ client: pool, table: flood, clock: 'client', sweepEvery: 100, timeoutMs: 5000 });
    const p = resolvePolicy({ limit: 0, period: '1s' });
    const q = resolvePolicy({ limit: 5, period: '1s' });
    const t0 = Date.now();
    for (let i = 0; i < 200; i++) await store.check(`zero:${i}`, p, 1, t0, true);
    assert.equal(await count(`SELECT count(*) AS n FROM ${flood}`), 0, 'a rejected request keeps nothing');
    for (let i = 0; i < 300; i++) await store.check(`k:${i}`, q, 1, t0 + i * 10, true);
    await store.sweep();
    const left = await count(`SELECT count(*) AS n FROM ${flood}`);
    assert.ok(left < 300, `rows left ${left}`);
  });

  it("decides on the database's clock by default, whatever the caller's", async () => {
    const store = createMySqlStore({ client: pool, table });
    const p = resolvePolicy({ limit: 1, period: '1h' });
    assert.equal((await store.check('clock', p, 1, 0, true)).allowed, true);
    assert.equal((await store.check('clock', p, 1, Date.now() + 10 * 365 * 86_400_000, true)).allowed, false);
  });
});
