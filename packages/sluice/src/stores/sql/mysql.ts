/** The `sluice/mysql` entry point: limits kept in MySQL or MariaDB through the store kit. */

export type { KitStore, KitStoreOptions } from '../kit/kit-store.js';
export { mySqlTableSql } from './mysql-backend.js';
export { createMySqlStore, type MySqlStoreOptions } from './mysql-store.js';
