/**
 * sluice/sqlite on better-sqlite3 in a temporary file: the store kit's conformance suite and differential test
 * (client clock), a fresh table for each store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import Database from 'better-sqlite3';
import { createSqliteStore } from '../../src/stores/sql/sqlite.js';
import { storeConformance } from '../../src/testing/index.js';

const dir = mkdtempSync(join(tmpdir(), 'sluice-sqlite-'));
const db = new Database(join(dir, 'limits.db'));
let tables = 0;

storeConformance({
  name: 'sqlite (better-sqlite3)',
  createStore: async () => {
    const store = createSqliteStore({ db, table: `conf_${++tables}`, clock: 'client', sweepEvery: 0 });
    await store.ready();
    return store;
  },
  differential: { runs: 15, ...(process.env.SLUICE_SEED ? { seed: Number(process.env.SLUICE_SEED) } : {}) },
});

after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});
