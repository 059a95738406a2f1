/**
 * sluice/postgres on a postgres.js (`postgres`) sql instance: the store kit's conformance suite and differential test
 * (client clock) on the PostgreSQL this machine runs, in a table of this file's own.
 */
import { after } from 'node:test';
import postgres from 'postgres';
import { createPostgresStore } from '../../src/stores/sql/postgres.js';
import { storeConformance } from '../../src/testing/index.js';

const sql = postgres({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 4, onnotice: () => {} });
const table = `sluice_confjs_${process.pid}`;

storeConformance({
  name: 'postgres (postgres.js)',
  createStore: async () => {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    const store = createPostgresStore({ client: sql, table, clock: 'client', timeoutMs: 5000, sweepEvery: 0 });
    await store.ready();
    return store;
  },
  differential: { runs: 15, ...(process.env.SLUICE_SEED ? { seed: Number(process.env.SLUICE_SEED) } : {}) },
});

after(async () => {
  await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
  await sql.end();
});
