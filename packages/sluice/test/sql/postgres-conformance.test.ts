/**
 * sluice/postgres on the PostgreSQL this machine runs: the store kit's conformance suite and differential test
 * (client clock), in a table of this file's own.
 */
import { after } from 'node:test';
import pg from 'pg';
import { createPostgresStore } from '../../src/stores/sql/postgres.js';
import { storeConformance } from '../../src/testing/index.js';

const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 4 });
const table = `sluice_conf_${process.pid}`;

storeConformance({
  name: 'postgres (pg Pool)',
  createStore: async () => {
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    const store = createPostgresStore({ client: pool, table, clock: 'client', timeoutMs: 5000, sweepEvery: 0 });
    await store.ready();
    return store;
  },
  differential: { runs: 15, ...(process.env.SLUICE_SEED ? { seed: Number(process.env.SLUICE_SEED) } : {}) },
});

after(async () => {
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.end();
});
