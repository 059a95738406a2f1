/**
 * The SQLite backend of the store kit, for `better-sqlite3` and `node:sqlite` (both synchronous): a write
 * transaction per decision (`BEGIN IMMEDIATE`), so processes sharing one file take turns and stay exact; a busy
 * database is waited for up to `busy_timeout`, then answered by the failure policy.
 */
import { isSluiceError, SluiceError } from '../../core/errors.js';
import type { StateBackend, StateStep, StoredState } from '../kit/state-backend.js';
import { idHex } from './sql-text.js';

/** A prepared statement, as better-sqlite3 and node:sqlite both have it (positional parameters). */
interface SqliteStatement {
  get(...params: unknown[]): unknown;
  run(...params: unknown[]): unknown;
}
/** A database connection, as better-sqlite3 and node:sqlite's DatabaseSync both have it. */
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
}

/** Options of the SQLite backend. */
export interface SqliteBackendOptions {
  db: SqliteDatabase;
  /** Quoted table name. */
  table: string;
  clock: 'database' | 'client';
  /** Most ms a decision waits for another connection's write transaction (`PRAGMA busy_timeout`). */
  lockTimeoutMs: number;
  createTable: boolean;
  /** Switches the file to write-ahead logging (readers never wait for writers; a lasting setting of the file). */
  wal: boolean;
}

/** The table the SQLite store keeps its rows in (also the documented migration). */
export function sqliteTableSql(table: string): string {
  const index = `"${table.replace(/"/g, '').replace(/\./g, '_')}_expires"`;
  return `CREATE TABLE IF NOT EXISTS ${table} (id BLOB PRIMARY KEY, state TEXT NOT NULL, expires_at REAL NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ${index} ON ${table} (expires_at);`;
}

/** The database's clock (this machine's, as SQLite reads it) in whole ms since the epoch. */
const DB_NOW = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

/** An SQLite error as sluice's: a missing table says what to run, a busy or read-only database what happened. */
export function sqliteError(error: unknown, table: string): unknown {
  const e = error as { code?: unknown; message?: unknown; errcode?: unknown };
  const text = `${String(e?.code ?? '')} ${String(e?.message ?? '')}`;
  if (/no such table/.test(text))
    return new SluiceError(
      'ERR_SLUICE_STORE_TABLE_MISSING',
      `SQLite has no table ${table}: run the migration (sqliteTableSql() in sluice/sqlite: ${sqliteTableSql(table).split('\n')[0]}) or pass createTable: true`,
      { cause: error },
    );
  if (/SQLITE_READONLY|readonly database|SQLITE_CANTOPEN|SQLITE_PERM/i.test(text))
    return new SluiceError(
      'ERR_SLUICE_STORE_PERMISSION',
      `SQLite cannot write ${table}: open the database read-write, and give the process write access to the file and its folder (for the -wal and -shm files)`,
      { cause: error },
    );
  if (/SQLITE_BUSY|SQLITE_LOCKED|database is locked/i.test(text))
    return new SluiceError('ERR_SLUICE_STORE_TIMEOUT', `SQLite: ${table}'s database stayed locked past lockTimeoutMs`, {
      cause: error,
    });
  return error;
}

/** The statements a backend runs, prepared once. */
interface Statements {
  read: SqliteStatement;
  now: SqliteStatement;
  upsert: SqliteStatement;
  remove: SqliteStatement;
  sweep: SqliteStatement;
}

/** Sets the connection up (busy timeout, WAL, the table when asked) and prepares every statement. */
function prepareStatements(options: SqliteBackendOptions): Statements {
  const { db, table } = options;
  if ((db as { readonly?: unknown }).readonly === true)
    throw sqliteError(new Error('SQLITE_READONLY: the database was opened read-only'), table);
  try {
    db.exec(`PRAGMA busy_timeout = ${Math.ceil(options.lockTimeoutMs)}`);
    if (options.wal) db.exec('PRAGMA journal_mode = WAL');
    if (options.createTable) db.exec(sqliteTableSql(table));
    return {
      read: db.prepare(`SELECT state, expires_at FROM ${table} WHERE id = ?`),
      now: db.prepare(`SELECT ${DB_NOW} AS now`),
      upsert: db.prepare(
        `INSERT INTO ${table} (id, state, expires_at) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at`,
      ),
      remove: db.prepare(`DELETE FROM ${table} WHERE id = ?`),
      sweep: db.prepare(`DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE expires_at <= ? LIMIT ?)`),
    };
  } catch (error) {
    throw sqliteError(error, table);
  }
}

/** The time a decision is made at: the database's clock or the caller's. */
function decisionNow(s: Statements, clock: SqliteBackendOptions['clock'], nowMs: number): number {
  return clock === 'database' ? Number((s.now.get() as { now: number | bigint }).now) : nowMs;
}

/** How long, after a decision waited the whole busy timeout in vain, the next ones do not wait for the lock. */
export const SQLITE_BUSY_BACKOFF_MS = 1000;

/** Takes the write lock, waiting for it as told. */
interface WriteLock {
  begin(nowMs: number): void;
}

/**
 * The write lock (`BEGIN IMMEDIATE`) with a back-off. The drivers are synchronous: a decision waiting for the lock
 * blocks the event loop for up to the busy timeout, and while another process holds the lock, decision after
 * decision would block in turn. So once a decision waited the whole timeout in vain, the decisions of the next
 * SQLITE_BUSY_BACKOFF_MS (on the limiter's clock) try the lock without waiting (busy_timeout 0): free, they decide;
 * held, they fail at once and the failure policy answers. A decision that gets the lock ends the back-off.
 */
function writeLock(options: SqliteBackendOptions): WriteLock {
  const { db, table, lockTimeoutMs } = options;
  let backoffUntil: number | undefined;
  const busyTimeout = (ms: number) => db.exec(`PRAGMA busy_timeout = ${Math.ceil(ms)}`);
  return {
    begin(nowMs) {
      // Set on every try of a back-off: the service's health ping sets busy_timeout back meanwhile.
      if (backoffUntil !== undefined) busyTimeout(nowMs < backoffUntil ? 0 : lockTimeoutMs);
      try {
        db.exec('BEGIN IMMEDIATE');
      } catch (error) {
        const failure = sqliteError(error, table);
        const waited = backoffUntil === undefined || nowMs >= backoffUntil;
        if (waited && isSluiceError(failure, 'ERR_SLUICE_STORE_TIMEOUT')) backoffUntil = nowMs + SQLITE_BUSY_BACKOFF_MS;
        throw failure;
      }
      if (backoffUntil !== undefined) {
        backoffUntil = undefined;
        busyTimeout(lockTimeoutMs);
      }
    },
  };
}

/** One decision's write transaction (the hot path): read the rows, run the step, write what it changed, commit. */
function transact<T>(
  options: SqliteBackendOptions,
  s: Statements,
  lock: WriteLock,
  ids: readonly string[],
  nowMs: number,
  step: StateStep<T>,
): T {
  const { db, table } = options;
  const keys = ids.map((id) => Buffer.from(idHex(id), 'hex'));
  lock.begin(nowMs);
  try {
    const states = keys.map((key) => {
      const row = s.read.get(key) as { state: string; expires_at: number } | undefined;
      return row === undefined ? undefined : ({ state: row.state, expiresAt: Number(row.expires_at) } as StoredState);
    });
    const { writes, result } = step(states, decisionNow(s, options.clock, nowMs));
    writes.forEach((w, i) => {
      if (w === null) s.remove.run(keys[i]);
      else if (w !== undefined) s.upsert.run(keys[i], w.state, w.expiresAt);
    });
    db.exec('COMMIT');
    return result;
  } catch (error) {
    try {
      db.exec('ROLLBACK');
    } catch {
      // No transaction left to roll back (SQLite ended it on the error).
    }
    throw sqliteError(error, table);
  }
}

/** Creates the SQLite backend (createSqliteStore wraps it in the kit). */
export function createSqliteBackend(options: SqliteBackendOptions): StateBackend {
  let statements: Statements | undefined;
  const lock = writeLock(options);
  const prepare = (): Statements => {
    statements ??= prepareStatements(options);
    return statements;
  };

  return {
    name: 'sqlite',
    update: async (ids, nowMs, step) => transact(options, prepare(), lock, ids, nowMs, step),
    async sweep(nowMs, max) {
      const s = prepare();
      const at = decisionNow(s, options.clock, nowMs);
      try {
        return Number((s.sweep.run(at, max) as { changes?: number | bigint }).changes ?? 0);
      } catch (error) {
        throw sqliteError(error, options.table);
      }
    },
    async ready() {
      prepare();
    },
    async close() {},
  };
}
