/**
 * The MySQL / MariaDB backend of the store kit: decisions grouped into transactions (group commit) on pooled
 * connections, made exact across processes by row locks — every id is first upserted (`INSERT … ON DUPLICATE KEY
 * UPDATE`, a placeholder row for a new key), which locks it exclusively, in a fixed order, so rows not written yet are
 * serialised too. Two round trips per transaction however many decisions share it.
 */
import { SluiceError } from '../../core/errors.js';
import type { StateBackend, StateStep } from '../kit/state-backend.js';
import { type BatchEntry, createBatcher, GROUP_COMMIT_BOUNDS } from './group-commit.js';
import type { MySqlClient } from './mysql-sessions.js';
import { DB_NOW, type MySqlTarget, runTransaction } from './mysql-transaction.js';
import { idHex, sqlNumber } from './sql-text.js';

/** Options of the MySQL backend. */
export interface MySqlBackendOptions {
  client: MySqlClient;
  /** Quoted table name (backticks). */
  table: string;
  clock: 'database' | 'client';
  /** Most ms a transaction waits for another's row lock (rounded up to whole seconds, as InnoDB counts). */
  lockTimeoutMs: number;
  createTable: boolean;
  /** Answers a decision only once its commit is on disk (false: once its writes are sent, the commit after). */
  durable: boolean;
  /** Most transactions this process runs at once (decisions arriving meanwhile share the next ones). */
  maxInFlight: number;
}

/** The table the MySQL store keeps its rows in (also the documented migration). */
export function mySqlTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (id VARBINARY(512) NOT NULL PRIMARY KEY, state MEDIUMTEXT CHARACTER SET ascii NOT NULL, expires_at DOUBLE NOT NULL, KEY expires_at (expires_at)) ENGINE=InnoDB`;
}

/** Deadlocks (a sweep crossing a decision) are retried this many times before the failure policy answers. */
const DEADLOCK_RETRIES = 3;

/** A MySQL error as sluice's: a missing table or a permission says what to run, a lock wait says it timed out. */
export function mySqlError(error: unknown, table: string): unknown {
  const errno = (error as { errno?: unknown })?.errno;
  if (errno === 1146)
    return new SluiceError(
      'ERR_SLUICE_STORE_TABLE_MISSING',
      `MySQL has no table ${table}: run the migration (mySqlTableSql() in sluice/mysql: ${mySqlTableSql(table)}) or pass createTable: true`,
      { cause: error },
    );
  if (errno === 1142 || errno === 1044 || errno === 1143)
    return new SluiceError(
      'ERR_SLUICE_STORE_PERMISSION',
      `MySQL refused access to ${table}: GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO the store's user (and CREATE for createTable)`,
      { cause: error },
    );
  if (errno === 1205)
    return new SluiceError('ERR_SLUICE_STORE_TIMEOUT', `MySQL: a lock on ${table} was held past lockTimeoutMs`, {
      cause: error,
    });
  return error;
}

/**
 * The one-time check of a backend (lock timeout, the table made or found), shared by every caller until it fails;
 * a failure (the database not reachable yet, too) is tried again on the next use.
 */
function preparer(target: MySqlTarget, createTable: boolean): () => Promise<void> {
  let prepared: Promise<void> | undefined;
  return () => {
    prepared ??= prepareTable(target, createTable).catch((error: unknown) => {
      prepared = undefined;
      throw error;
    });
    return prepared;
  };
}

/** Sets the session's lock timeout, creates the table when told to, and checks it can be read. */
async function prepareTable(target: MySqlTarget, createTable: boolean): Promise<void> {
  const { client, table, lockSeconds } = target;
  const session = await client.session();
  try {
    if (session.fresh) await session.run([`SET SESSION innodb_lock_wait_timeout = ${lockSeconds}`]);
    if (createTable) await session.run([mySqlTableSql(table)]);
    await session.run([`SELECT 1 FROM ${table} LIMIT 1`]);
    session.release(false);
  } catch (error) {
    session.release(false);
    throw mySqlError(error, table);
  }
}

/**
 * A batch, retried whole when InnoDB picks it as a deadlock's victim before anything was answered. Once answered
 * (not durable), a retry would decide again on rows others may have changed since, and could take back nothing it
 * told: the failed writes are lost instead, as a crash before the commit loses them.
 */
async function runBatch(
  target: MySqlTarget,
  prepare: () => Promise<void>,
  entries: readonly BatchEntry[],
): Promise<void> {
  await prepare();
  const hexes = [...new Set(entries.flatMap((e) => e.hexes))];
  const sent = { answered: false };
  for (let attempt = 0; ; attempt++) {
    try {
      return await runTransaction(target, entries, hexes, sent);
    } catch (error) {
      if (sent.answered || (error as { errno?: unknown })?.errno !== 1213 || attempt >= DEADLOCK_RETRIES)
        throw mySqlError(error, target.table);
    }
  }
}

/** Deletes up to `max` expired rows; resolves with how many went. */
async function sweepExpired(target: MySqlTarget, nowMs: number, max: number): Promise<number> {
  const { client, table, clock } = target;
  const session = await client.session();
  try {
    const at = clock === 'database' ? DB_NOW : sqlNumber(nowMs);
    // Placeholders (expires_at 0) left by a connection that died mid-transaction are swept too.
    const [header] = await session.run([`DELETE FROM ${table} WHERE expires_at <= ${at} LIMIT ${sqlNumber(max)}`]);
    session.release(false);
    return Number((header as { affectedRows?: number })?.affectedRows ?? 0);
  } catch (error) {
    session.release(true);
    throw mySqlError(error, table);
  }
}

/** Creates the MySQL backend (createMySqlStore wraps it in the kit). */
export function createMySqlBackend(options: MySqlBackendOptions): StateBackend {
  const { table, clock, client, durable } = options;
  const lockSeconds = Math.max(1, Math.ceil(options.lockTimeoutMs / 1000));
  const target: MySqlTarget = { client, table, clock, lockSeconds, durable };
  const prepare = preparer(target, options.createTable);
  const enqueue = createBatcher((entries: BatchEntry[]) => runBatch(target, prepare, entries), {
    ...GROUP_COMMIT_BOUNDS,
    maxInFlight: options.maxInFlight,
  });

  return {
    name: 'mysql',
    update: <T>(ids: readonly string[], nowMs: number, step: StateStep<T>) =>
      new Promise<T>((resolve, reject) => {
        enqueue({ hexes: ids.map(idHex), nowMs, step, resolve: resolve as (v: unknown) => void, reject });
      }),
    sweep: (nowMs, max) => sweepExpired(target, nowMs, max),
    ready: prepare,
    // Decisions answered before their commit (durable: false) are on disk once close resolves.
    close: () => enqueue.drained(),
  };
}
