/**
 * A PostgreSQL or MySQL store whose database is not reachable at first (a boot order, a restart): ready() and the
 * decisions fail meanwhile, and once the database answers, the store prepares itself again and decides exactly.
 * The database "comes up" as a TCP proxy on loopback in front of the local server, refusing at first.
 */
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { resolvePolicy } from '../../src/core/policy.js';
import type { KitStore } from '../../src/stores/kit/kit-store.js';
import { createMySqlStore } from '../../src/stores/sql/mysql.js';
import { createPostgresStore } from '../../src/stores/sql/postgres.js';
import { createLateProxy } from './late-proxy.js';

const table = `sluice_late_${process.pid}`;
const pgAdmin = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 1 });
const myAdmin = mysql.createPool({ host: '127.0.0.1', port: 3306, user: 'root', database: 'test', connectionLimit: 1 });

after(async () => {
  await pgAdmin.query(`DROP TABLE IF EXISTS ${table}`);
  await myAdmin.query(`DROP TABLE IF EXISTS ${table}`);
  await Promise.all([pgAdmin.end(), myAdmin.end()]);
});

/** While the database refuses, ready() and a decision fail; once it accepts, both work and decide exactly. */
async function recoversOnceUp(store: KitStore, up: () => Promise<void>): Promise<void> {
  const p = resolvePolicy({ limit: 2, period: '1h' });
  await assert.rejects(store.ready());
  await assert.rejects(async () => store.check('k', p, 1, Date.now(), true));
  await up();
  assert.equal((await store.check('k', p, 1, Date.now(), true)).remaining, 1);
  assert.equal((await store.check('k', p, 1, Date.now(), true)).remaining, 0);
  assert.equal((await store.check('k', p, 1, Date.now(), true)).allowed, false);
  await store.ready();
  assert.equal(store.isReady, true);
}

describe('SQL stores: a database that is not up yet', () => {
  it('postgres: recovers once the database accepts connections', async () => {
    const proxy = await createLateProxy(5432);
    const pool = new pg.Pool({ host: '127.0.0.1', port: proxy.port, user: 'postgres', database: 'test', max: 2 });
    pool.on('error', () => {});
    try {
      await recoversOnceUp(createPostgresStore({ client: pool, table, timeoutMs: 60_000 }), proxy.start);
    } finally {
      await pool.end();
      await proxy.stop();
    }
  });

  it('mysql: recovers once the database accepts connections', async () => {
    const proxy = await createLateProxy(3306);
    const pool = mysql.createPool({
      host: '127.0.0.1',
      port: proxy.port,
      user: 'root',
      database: 'test',
      connectionLimit: 2,
      multipleStatements: true,
    });
    try {
      await recoversOnceUp(createMySqlStore({ client: pool, table, timeoutMs: 60_000 }), proxy.start);
    } finally {
      await pool.end();
      await proxy.stop();
    }
  });
});
