/** The `sluice/postgres` entry point: limits kept in PostgreSQL through the store kit. */

export type { KitStore, KitStoreOptions } from '../kit/kit-store.js';
export { postgresTableSql } from './postgres-backend.js';
export { createPostgresStore, type PostgresStoreOptions } from './postgres-store.js';
