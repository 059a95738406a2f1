/**
 * createSqliteStore: sluice's limits kept in an SQLite file, exact across the processes that share it, for
 * `better-sqlite3` (and `node:sqlite`'s DatabaseSync where the Node version has it) — every algorithm through the
 * store kit.
 */
import { SluiceError } from '../../core/errors.js';
import { createKitStore, type KitStore, type KitStoreOptions } from '../kit/kit-store.js';
import { tableName } from './sql-text.js';
import { createSqliteBackend, type SqliteDatabase } from './sqlite-backend.js';

/** Options of {@link createSqliteStore}. */
export interface SqliteStoreOptions extends KitStoreOptions {
  /** An open `better-sqlite3` Database, or a `node:sqlite` DatabaseSync (Node 22.5+; not in Node 20). */
  db: unknown;
  /** The table. @default 'sluice_state' */
  table?: string;
  /** Creates the table (and its index) when missing; false when a migration does (see sqliteTableSql). @default true */
  createTable?: boolean;
  /**
   * Whose clock decides: `'database'` (the machine's clock as SQLite reads it) or `'client'` (the `nowMs` the limiter
   * passes: tests with a manual clock). @default 'database'
   */
  clock?: 'database' | 'client';
  /**
   * Most ms a decision waits while another connection writes (`PRAGMA busy_timeout` on `db`). SQLite's drivers are
   * synchronous: this wait blocks the event loop, so keep it short. @default timeoutMs
   */
  lockTimeoutMs?: number;
  /** Switches the file to write-ahead logging (`PRAGMA journal_mode = WAL`, kept by the file). @default true */
  wal?: boolean;
}

const isDatabase = (db: unknown): db is SqliteDatabase =>
  db !== null &&
  typeof db === 'object' &&
  typeof (db as SqliteDatabase).prepare === 'function' &&
  typeof (db as SqliteDatabase).exec === 'function';

/**
 * Creates a store that keeps counters in SQLite. Each decision is a write transaction (`BEGIN IMMEDIATE`), so every
 * process on the same file decides in turn: exact, for one machine. Rows are kept only for admitted requests and
 * blocks; expired rows are deleted now and then (`sweepEvery`), never by a timer per key.
 * @example
 * import Database from 'better-sqlite3';
 * const store = createSqliteStore({ db: new Database('/var/lib/app/limits.db') });
 */
export function createSqliteStore(options: SqliteStoreOptions): KitStore {
  if (!isDatabase(options.db))
    throw new SluiceError(
      'ERR_SLUICE_INVALID_STORE',
      "createSqliteStore: db must be an open better-sqlite3 Database (new Database('limits.db')) or a node:sqlite DatabaseSync",
      { option: 'db' },
    );
  const clock = options.clock ?? 'database';
  if (clock !== 'database' && clock !== 'client')
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `clock: expected 'database' or 'client', got ${String(clock)}`, {
      option: 'clock',
    });
  const lockTimeoutMs = options.lockTimeoutMs ?? options.timeoutMs ?? 500;
  if (!Number.isFinite(lockTimeoutMs) || lockTimeoutMs < 0)
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'lockTimeoutMs: must be a number of ms ≥ 0', {
      option: 'lockTimeoutMs',
    });
  const backend = createSqliteBackend({
    db: options.db,
    table: tableName(options.table ?? 'sluice_state'),
    clock,
    lockTimeoutMs,
    createTable: options.createTable ?? true,
    wal: options.wal ?? true,
  });
  return createKitStore(backend, options);
}
