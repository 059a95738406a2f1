/**
 * createMySqlStore: sluice's limits kept in a MySQL 8 / MariaDB 10.6+ table, exact across processes, for `mysql2`
 * (a pool or a connection, promise or callback API) — every algorithm through the store kit, the database's clock by
 * default.
 */
import { SluiceError } from '../../core/errors.js';
import { createKitStore, type KitStore, type KitStoreOptions } from '../kit/kit-store.js';
import { groupCommitInFlight } from './group-commit.js';
import { createMySqlBackend } from './mysql-backend.js';
import { mySqlClient } from './mysql-sessions.js';
import { tableName } from './sql-text.js';

/** Options of {@link createMySqlStore}. */
export interface MySqlStoreOptions extends KitStoreOptions {
  /**
   * A `mysql2` pool (recommended: decisions run side by side; `multipleStatements: true` saves round trips), or one
   * connection (one transaction at a time); promise (`mysql2/promise`) or callback API.
   */
  client: unknown;
  /** The table, `name` or `database.name`. @default 'sluice_state' */
  table?: string;
  /** Creates the table when missing; false when a migration does (see mySqlTableSql). @default true */
  createTable?: boolean;
  /**
   * Whose clock decides: `'database'` (the server's, so application servers with skewed clocks agree) or `'client'`
   * (the `nowMs` the limiter passes: tests with a manual clock). @default 'database'
   */
  clock?: 'database' | 'client';
  /** Most ms a decision waits for another's row lock (InnoDB counts whole seconds: rounded up). @default timeoutMs */
  lockTimeoutMs?: number;
  /**
   * Answer a decision only once its commit is on disk. Off by default: a decision is answered once it is made on its
   * locked rows and its writes are sent; the commit (and the server's log flush, with the default
   * `innodb_flush_log_at_trx_commit = 1`) completes after, the rows locked until then, so decisions stay exact between
   * processes. A crash of the server (or a lost connection) before the commit forgets those last counts — as
   * sluice/postgres's and Redis's defaults do. @default false
   */
  durable?: boolean;
}

/** A checked table name quoted for MySQL (backticks). */
const mySqlTableName = (name: string) => tableName(name).replace(/"/g, '`');

/**
 * Creates a store that keeps counters in MySQL or MariaDB (InnoDB), shared by every process that uses the table.
 * A decision is a transaction: its keys' rows are locked (a placeholder row for a new key), read, decided on and
 * written; decisions that arrive while transactions run share the next ones (group commit). Rows are kept only for admitted requests and blocks; expired rows are deleted now and then in the
 * background (`sweepEvery`), never by a timer per key.
 * @example
 * import mysql from 'mysql2/promise';
 * const store = createMySqlStore({ client: mysql.createPool({ uri: 'mysql://app@db/app', multipleStatements: true }) });
 * await store.ready();
 */
export function createMySqlStore(options: MySqlStoreOptions): KitStore {
  const client = mySqlClient(options.client);
  if (client === undefined)
    throw new SluiceError(
      'ERR_SLUICE_INVALID_STORE',
      "createMySqlStore: client must be a mysql2 pool or connection (mysql.createPool({ uri }) from 'mysql2/promise' or 'mysql2')",
      { option: 'client' },
    );
  const clock = options.clock ?? 'database';
  if (clock !== 'database' && clock !== 'client')
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `clock: expected 'database' or 'client', got ${String(clock)}`, {
      option: 'clock',
    });
  const lockTimeoutMs = options.lockTimeoutMs ?? options.timeoutMs ?? 500;
  if (!Number.isFinite(lockTimeoutMs) || lockTimeoutMs <= 0)
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'lockTimeoutMs: must be a number of ms > 0', {
      option: 'lockTimeoutMs',
    });
  const backend = createMySqlBackend({
    client,
    table: mySqlTableName(options.table ?? 'sluice_state'),
    clock,
    lockTimeoutMs,
    createTable: options.createTable ?? true,
    durable: options.durable ?? false,
    // Decisions arriving while these run share the next ones.
    maxInFlight: groupCommitInFlight(client.size),
  });
  return createKitStore(backend, options);
}
