/**
 * sluice/postgres's group commit: decisions arriving together share transactions (far fewer connections taken than
 * decisions), and decisions on one key within a shared transaction see each other's writes (exact counts).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { resolvePolicy } from '../../src/core/policy.js';
import { createPostgresStore } from '../../src/stores/sql/postgres.js';

const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 4 });
const table = `sluice_batch_${process.pid}`;
let connects = 0;
// Counts the connections taken (a transaction each); pool.query passes a callback, which goes through as given.
const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
(pool as unknown as { connect: (...args: unknown[]) => unknown }).connect = (...args: unknown[]) => {
  connects++;
  return connect(...args);
};

after(async () => {
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.end();
});

describe('postgres store: group commit', () => {
  const store = createPostgresStore({ client: pool, table, clock: 'client', timeoutMs: 10_000, localCache: false });
  const policy = resolvePolicy({ algorithm: 'token-bucket', limit: 10, period: '1h' });

  it('200 concurrent decisions on 200 keys take a few transactions, not 200', async () => {
    await store.ready();
    connects = 0;
    const now = 1_700_000_000_000;
    const decisions = await Promise.all(
      Array.from({ length: 200 }, (_, i) => store.check(`k${i}`, policy, 1, now, true)),
    );
    assert.ok(decisions.every((d) => d.allowed && d.remaining === 9));
    assert.ok(connects <= 8, `${connects} transactions for 200 decisions`);
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${table}`);
    assert.equal(rows[0].n, 200);
  });

  it('decisions on one key sharing a transaction admit exactly the limit, each seeing the ones before', async () => {
    const now = 1_700_000_000_000;
    const decisions = await Promise.all(Array.from({ length: 100 }, () => store.check('hot', policy, 1, now, true)));
    assert.equal(decisions.filter((d) => d.allowed).length, 10);
    const remaining = decisions.filter((d) => d.allowed).map((d) => d.remaining);
    assert.deepEqual(
      [...remaining].sort((a, b) => b - a),
      [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
    );
    const later = await store.check('hot', policy, 1, now + 1, true);
    assert.equal(later.allowed, false);
  });

  it('after a failed transaction (the table dropped) the next decisions work again once it is back', async () => {
    await pool.query(`DROP TABLE ${table}`);
    const now = 1_700_000_000_000;
    const failed = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => store.check(`f${i}`, policy, 1, now, true)),
    );
    assert.ok(failed.every((r) => r.status === 'rejected'));
    for (const r of failed) assert.match(String((r as PromiseRejectedResult).reason.code), /^ERR_SLUICE_STORE_/);
    await pool.query(
      `CREATE TABLE ${table} (id bytea PRIMARY KEY, state text NOT NULL, expires_at double precision NOT NULL)`,
    );
    const again = await Promise.all(Array.from({ length: 20 }, (_, i) => store.check(`f${i}`, policy, 1, now, true)));
    assert.ok(again.every((d) => d.allowed));
  });
});
