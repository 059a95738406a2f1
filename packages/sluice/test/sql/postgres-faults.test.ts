/**
 * sluice/postgres against what goes wrong: hostile keys, a missing table, a role without rights, a database that
 * does not answer in time (the limiter's failure policy answers), a flood of keys (rows swept, none kept for
 * rejections), and the database's clock by default.
 */
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { isSluiceError } from '../../src/core/errors.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createPostgresStore } from '../../src/stores/sql/postgres.js';

const connection = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
const pool = new pg.Pool({ ...connection, max: 4 });
const table = `sluice_faults_${process.pid}`;
const rowCount = async (name = table) => Number((await pool.query(`SELECT count(*)::int AS n FROM ${name}`)).rows[0].n);

after(async () => {
  for (const t of [table, `${table}_flood`, `${table}_perm`]) await pool.query(`DROP TABLE IF EXISTS ${t}`);
  await pool.query(`DROP ROLE IF EXISTS ${table}_role`);
  await pool.end();
});

describe('postgres store: faults and bounds', () => {
  it('stores hostile keys apart and safely: SQL-looking, NUL and lone surrogates, 1 MB long', async () => {
    const store = createPostgresStore({ client: pool, table });
    const p = resolvePolicy({ limit: 2, period: '1h' });
    const keys = [
      "'; DROP TABLE pg_class; --",
      'a\u0000b',
      'a\u0000c',
      '\ud800',
      '\udc00',
      'x'.repeat(1 << 20),
      `${'x'.repeat(1 << 20)}y`,
    ];
    for (const key of keys)
      assert.equal((await store.check(key, p, 1, Date.now(), true)).remaining, 1, key.slice(0, 20));
    for (const key of keys)
      assert.equal((await store.check(key, p, 1, Date.now(), true)).remaining, 0, key.slice(0, 20));
    const widest = (await pool.query(`SELECT max(octet_length(id)) AS n FROM ${table}`)).rows[0].n;
    assert.ok(Number(widest) <= 512, `ids are bounded (widest ${widest} bytes)`);
    assert.equal(await rowCount(), keys.length);
  });

  it('a missing table with createTable: false is ERR_SLUICE_STORE_TABLE_MISSING naming the migration', async () => {
    const store = createPostgresStore({ client: pool, table: `${table}_absent`, createTable: false });
    await assert.rejects(
      store.ready(),
      (e: unknown) => isSluiceError(e, 'ERR_SLUICE_STORE_TABLE_MISSING') && /CREATE TABLE/.test(e.message),
    );
  });

  it('a role without rights is ERR_SLUICE_STORE_PERMISSION naming the GRANT', async () => {
    await pool.query(
      `CREATE TABLE IF NOT EXISTS ${table}_perm (id bytea PRIMARY KEY, state text NOT NULL, expires_at double precision NOT NULL)`,
    );
    await pool.query(`DROP ROLE IF EXISTS ${table}_role`);
    await pool.query(`CREATE ROLE ${table}_role LOGIN`);
    const limited = new pg.Pool({ ...connection, user: `${table}_role`, max: 1 });
    try {
      const store = createPostgresStore({ client: limited, table: `${table}_perm`, createTable: false });
      await assert.rejects(
        store.ready(),
        (e: unknown) => isSluiceError(e, 'ERR_SLUICE_STORE_PERMISSION') && /GRANT/.test(e.message),
      );
    } finally {
      await limited.end();
    }
  });

  it('a decision stuck behind a lock times out, and the limiter fails open or closed as told', async () => {
    const store = createPostgresStore({ client: pool, table, timeoutMs: 150 });
    await store.ready();
    const holder = await pool.connect();
    try {
      // Another transaction holds the whole table: every decision waits past timeoutMs.
      await holder.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      const open = createLimiter({ limit: 1, period: '1h', store, fail: 'open' });
      const closed = createLimiter({ limit: 1, period: '1h', store, fail: 'closed' });
      const a = await open.check('stuck');
      assert.equal(a.allowed, true);
      assert.equal(a.degraded, true);
      const b = await closed.check('stuck');
      assert.equal(b.allowed, false);
      assert.equal(b.degraded, true);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it('a flood of keys: rejections write no row, and expired rows are swept in the background', async () => {
    const flood = `${table}_flood`;
    const store = createPostgresStore({ client: pool, table: flood, clock: 'client', sweepEvery: 100 });
    const p = resolvePolicy({ limit: 0, period: '1s' });
    const q = resolvePolicy({ limit: 5, period: '1s' });
    const t0 = Date.now();
    for (let i = 0; i < 300; i++) await store.check(`zero:${i}`, p, 1, t0, true);
    assert.equal(await rowCount(flood), 0, 'a rejected request keeps nothing');
    for (let i = 0; i < 300; i++) await store.check(`k:${i}`, q, 1, t0 + i * 10, true);
    // Rows of keys whose second has passed were swept on the 100th, 200th and 300th write.
    await new Promise((resolve) => setImmediate(resolve));
    await store.sweep();
    assert.ok((await rowCount(flood)) < 300, `rows left ${await rowCount(flood)}`);
  });

  it('lockTimeoutMs must be more than 0 and fit lock_timeout: 0 (wait forever in PostgreSQL), -1, NaN, 1e12 are refused', async () => {
    for (const lockTimeoutMs of [0, -1, Number.NaN, 1e12, Number.POSITIVE_INFINITY])
      assert.throws(
        () => createPostgresStore({ client: pool, table, lockTimeoutMs }),
        (e: unknown) => isSluiceError(e, 'ERR_SLUICE_INVALID_OPTION') && e.option === 'lockTimeoutMs',
        String(lockTimeoutMs),
      );
    // A fraction of a ms is rounded up, not down to 0: the decision is made.
    const store = createPostgresStore({ client: pool, table, lockTimeoutMs: 0.5 });
    const p = resolvePolicy({ limit: 1, period: '1h' });
    assert.equal((await store.check('fraction', p, 1, Date.now(), true)).allowed, true);
  });

  it("decides on the database's clock by default, whatever the caller's", async () => {
    const store = createPostgresStore({ client: pool, table });
    const p = resolvePolicy({ limit: 1, period: '1h' });
    assert.equal((await store.check('clock', p, 1, 0, true)).allowed, true);
    // A caller 10 years ahead sees the same hour: the database's clock decided both.
    assert.equal((await store.check('clock', p, 1, Date.now() + 10 * 365 * 86_400_000, true)).allowed, false);
  });
});
