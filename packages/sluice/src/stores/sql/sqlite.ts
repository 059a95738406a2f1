/** The `sluice/sqlite` entry point: limits kept in an SQLite file through the store kit. */

export type { KitStore, KitStoreOptions } from '../kit/kit-store.js';
export { sqliteTableSql } from './sqlite-backend.js';
export { createSqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
