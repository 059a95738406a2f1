/**
 * sluice/mysql's group commit on the local MariaDB: decisions arriving together share transactions, decisions on one
 * key within a shared transaction see each other's writes, and answers given before the commit (durable: false) are
 * on disk for the next reader — as they are with durable: true.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { resolvePolicy } from '../../src/core/policy.js';
import { createMySqlStore } from '../../src/stores/sql/mysql.js';

const pool = mysql.createPool({
  host: '127.0.0.1',
  port: 3306,
  user: 'root',
  database: 'test',
  connectionLimit: 8,
  multipleStatements: true,
});
const table = `sluice_batch_${process.pid}`;
let connects = 0;
/** Most rows one transaction locked (placeholder tuples in its first statement). */
let mostRows = 0;
type Query = (sql: string, ...rest: unknown[]) => unknown;
type Callback = (error: unknown, connection: { query: Query }) => void;
// Counts the connections taken (a transaction each) on the callback pool behind the promise pool, and the rows each
// transaction locks.
const core = (pool as unknown as { pool: { getConnection: (cb: Callback) => void } }).pool;
const getConnection = core.getConnection.bind(core);
core.getConnection = (cb: Callback) => {
  connects++;
  getConnection((error, connection) => {
    if (connection !== undefined && !('counted' in connection)) {
      const query = connection.query.bind(connection);
      Object.assign(connection, {
        counted: true,
        query: (sql: string, ...rest: unknown[]) => {
          if (typeof sql === 'string' && sql.includes('START TRANSACTION'))
            mostRows = Math.max(mostRows, sql.split(", '', 0)").length - 1);
          return query(sql, ...rest);
        },
      });
    }
    cb(error, connection);
  });
};
const count = async (sql: string) => Number(((await pool.query(sql))[0] as { n: number }[])[0]?.n);

after(async () => {
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.query(`DROP TABLE IF EXISTS ${table}_durable`);
  await pool.end();
});

describe('mysql store: group commit', () => {
  const store = createMySqlStore({ client: pool, table, clock: 'client', timeoutMs: 10_000, localCache: false });
  const policy = resolvePolicy({ algorithm: 'token-bucket', limit: 10, period: '1h' });
  const now = 1_700_000_000_000;

  it('200 concurrent decisions on 200 keys take a few transactions, not 200', async () => {
    const own = createMySqlStore({ client: pool, table, clock: 'client', timeoutMs: 10_000, localCache: false });
    await own.ready();
    connects = 0;
    const decisions = await Promise.all(
      Array.from({ length: 200 }, (_, i) => own.check(`k${i}`, policy, 1, now, true)),
    );
    assert.ok(decisions.every((d) => d.allowed && d.remaining === 9));
    assert.ok(connects <= 8, `${connects} transactions for 200 decisions`);
    // Answered before their commits (durable: false): close waits for them, and no placeholder is left.
    await own.close();
    assert.equal(await count(`SELECT count(*) AS n FROM ${table}`), 200);
    assert.equal(await count(`SELECT count(*) AS n FROM ${table} WHERE state = ''`), 0);
  });

  it('decisions on one key sharing a transaction admit exactly the limit, each seeing the ones before', async () => {
    const decisions = await Promise.all(Array.from({ length: 100 }, () => store.check('hot', policy, 1, now, true)));
    const remaining = decisions.filter((d) => d.allowed).map((d) => d.remaining);
    assert.deepEqual(
      [...remaining].sort((a, b) => b - a),
      [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
    );
    assert.equal((await store.check('hot', policy, 1, now + 1, true)).allowed, false);
  });

  it('one caller after another on one key: each answer given before its commit is seen by the next decision', async () => {
    const answers: boolean[] = [];
    for (let i = 0; i < 15; i++) answers.push((await store.check('serial', policy, 1, now, true)).allowed);
    assert.equal(answers.filter(Boolean).length, 10);
    assert.deepEqual(answers.slice(10), [false, false, false, false, false]);
  });

  it('decisions of many limits are split so one transaction touches at most 1,024 rows; a bigger one runs alone', async () => {
    const items = (d: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ key: `m${d}:${i}`, policy, cost: 1 }));
    mostRows = 0;
    const many = await Promise.all(Array.from({ length: 40 }, (_, d) => store.checkMany(items(d, 60), now, true)));
    assert.ok(many.every((ds) => ds.length === 60 && ds.every((x) => x.allowed && x.remaining === 9)));
    assert.ok(mostRows > 60 && mostRows <= 1024, `a transaction locked ${mostRows} rows`);
    const alone = await store.checkMany(items(99, 1500), now, true);
    assert.ok(alone.every((x) => x.allowed));
    assert.equal(mostRows, 1500);
  });

  it('while the database is stuck, past 4,096 waiting decisions more fail at once; the rest go on after', async () => {
    const holder = await pool.getConnection();
    await holder.query('START TRANSACTION');
    // Every row and gap of the table locked: the first transactions wait, and decisions pile up behind them.
    await holder.query(`SELECT * FROM ${table} FOR UPDATE`);
    const pending = Array.from({ length: 5000 }, (_, i) =>
      Promise.resolve(store.check(`stuck${i}`, policy, 1, now, true)).then(
        (d) => d.allowed,
        (e: { code?: string }) => e.code,
      ),
    );
    await holder.query('ROLLBACK');
    holder.release();
    const outcomes = await Promise.all(pending);
    const refused = outcomes.filter((o) => o === 'ERR_SLUICE_STORE_UNAVAILABLE').length;
    assert.ok(refused > 0 && refused <= 5000 - 4096, `${refused} refused`);
    assert.equal(outcomes.filter((o) => o === true).length, 5000 - refused);
  });

  it('durable: true answers after the commit, with the same counts', async () => {
    const durable = createMySqlStore({
      client: pool,
      table: `${table}_durable`,
      clock: 'client',
      timeoutMs: 10_000,
      localCache: false,
      durable: true,
    });
    const decisions = await Promise.all(Array.from({ length: 30 }, () => durable.check('d', policy, 1, now, true)));
    assert.equal(decisions.filter((d) => d.allowed).length, 10);
    assert.equal(await count(`SELECT count(*) AS n FROM ${table}_durable WHERE state <> ''`), 1);
    await durable.close();
  });

  it('after failed transactions (the table dropped) the next decisions work again once it is back', async () => {
    await pool.query(`DROP TABLE ${table}`);
    const failed = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => store.check(`f${i}`, policy, 1, now, true)),
    );
    assert.ok(failed.every((r) => r.status === 'rejected'));
    for (const r of failed)
      assert.equal((r as PromiseRejectedResult).reason.code, 'ERR_SLUICE_STORE_TABLE_MISSING', String(r));
    await pool.query(
      `CREATE TABLE ${table} (id VARBINARY(512) NOT NULL PRIMARY KEY, state MEDIUMTEXT CHARACTER SET ascii NOT NULL, expires_at DOUBLE NOT NULL)`,
    );
    const again = await Promise.all(Array.from({ length: 20 }, (_, i) => store.check(`f${i}`, policy, 1, now, true)));
    assert.ok(again.every((d) => d.allowed));
  });
});
