/**
 * sluice/mysql on the MariaDB this machine runs: the store kit's conformance suite and differential test (client
 * clock), in a table of this file's own, through a mysql2 promise pool that sends a transaction's statements at once.
 */
import { after } from 'node:test';
import mysql from 'mysql2/promise';
import { createMySqlStore } from '../../src/stores/sql/mysql.js';
import { storeConformance } from '../../src/testing/index.js';

const pool = mysql.createPool({
  host: '127.0.0.1',
  port: 3306,
  user: 'root',
  database: 'test',
  connectionLimit: 4,
  multipleStatements: true,
});
const table = `sluice_conf_${process.pid}`;

storeConformance({
  name: 'mysql (mysql2 promise pool)',
  createStore: async () => {
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    const store = createMySqlStore({ client: pool, table, clock: 'client', timeoutMs: 5000, sweepEvery: 0 });
    await store.ready();
    return store;
  },
  differential: { runs: 15, ...(process.env.SLUICE_SEED ? { seed: Number(process.env.SLUICE_SEED) } : {}) },
});

after(async () => {
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.end();
});
