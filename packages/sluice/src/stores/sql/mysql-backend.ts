/**
 * The MySQL / MariaDB backend of the store kit: decisions grouped into transactions (group commit) on pooled
 * connections, made exact across processes by row locks — every id is first upserted (`INSERT … ON DUPLICATE KEY
 * UPDATE`, a placeholder row for a new key), which locks it exclusively, in a fixed order, so rows not written yet are
 * serialised too. Two round trips per transaction however many decisions share it.
 */
import { SluiceError } from '../../core/errors.js';
import type { StateBackend, StateStep } from '../kit/state-backend.js';
import { type BatchEntry, type BatchRows, createBatcher, GROUP_COMMIT_BOUNDS, runSteps } from './group-commit.js';
import type { MySqlClient } from './mysql-sessions.js';
import { idHex, sqlNumber, stateLiteral } from './sql-text.js';

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

/** The database's clock in whole ms since the epoch. */
const DB_NOW = 'FLOOR(UNIX_TIMESTAMP(SYSDATE(3)) * 1000)';
/** A placeholder row (a key locked before its first write): as good as absent. */
const PLACEHOLDER = "''";
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

const hexLiteral = (hex: string) => `X'${hex}'`;

/** Begin, lock every id (placeholders for new ones, in a fixed order: no deadlock between decisions), read them. */
function readStatements(table: string, hexes: readonly string[], lockSeconds: number | undefined): string[] {
  const sorted = [...hexes].sort();
  const values = sorted.map((h) => `(${hexLiteral(h)}, ${PLACEHOLDER}, 0)`).join(',');
  return [
    ...(lockSeconds === undefined ? [] : [`SET SESSION innodb_lock_wait_timeout = ${lockSeconds}`]),
    'START TRANSACTION',
    `INSERT INTO ${table} (id, state, expires_at) VALUES ${values} ON DUPLICATE KEY UPDATE id = id`,
    `SELECT HEX(id) AS id, state, expires_at, ${DB_NOW} AS now FROM ${table} WHERE id IN (${sorted.map(hexLiteral).join(',')}) FOR UPDATE`,
  ];
}

/** The rows as the steps left them (each once), the placeholders they left unwritten deleted, and the commit. */
function writeStatements(table: string, rows: BatchRows, placeholders: ReadonlySet<string>): string[] {
  const upserts: string[] = [];
  const deletes: string[] = [];
  for (const hex of new Set([...rows.dirty, ...placeholders])) {
    const row = rows.rows.get(hex);
    if (row !== undefined)
      upserts.push(`(${hexLiteral(hex)}, ${stateLiteral(row.state)}, ${sqlNumber(row.expiresAt)})`);
    else deletes.push(hexLiteral(hex));
  }
  const statements: string[] = [];
  if (upserts.length > 0)
    statements.push(
      `INSERT INTO ${table} (id, state, expires_at) VALUES ${upserts.join(',')} ON DUPLICATE KEY UPDATE state = VALUES(state), expires_at = VALUES(expires_at)`,
    );
  if (deletes.length > 0) statements.push(`DELETE FROM ${table} WHERE id IN (${deletes.join(',')})`);
  statements.push('COMMIT');
  return statements;
}

/** The locked rows as the steps see them (a placeholder as absent), which of them are placeholders, and the clock. */
function readRows(read: readonly Record<string, unknown>[]) {
  const rows: BatchRows = { rows: new Map(), dirty: new Set() };
  const placeholders = new Set<string>();
  let dbNow = Number.NaN;
  for (const row of read) {
    const hex = String(row.id).toLowerCase();
    dbNow = Number(row.now);
    if (String(row.state) === '') placeholders.add(hex);
    else rows.rows.set(hex, { state: String(row.state), expiresAt: Number(row.expires_at) });
  }
  return { rows, placeholders, dbNow };
}

/** Creates the MySQL backend (createMySqlStore wraps it in the kit). */
export function createMySqlBackend(options: MySqlBackendOptions): StateBackend {
  const { table, clock, client } = options;
  const lockSeconds = Math.max(1, Math.ceil(options.lockTimeoutMs / 1000));
  let prepared: Promise<void> | undefined;

  const prepare = () => {
    prepared ??= (async () => {
      const session = await client.session();
      try {
        if (session.fresh) await session.run([`SET SESSION innodb_lock_wait_timeout = ${lockSeconds}`]);
        if (options.createTable) await session.run([mySqlTableSql(table)]);
        await session.run([`SELECT 1 FROM ${table} LIMIT 1`]);
        session.release(false);
      } catch (error) {
        session.release(false);
        prepared = undefined;
        throw mySqlError(error, table);
      }
    })();
    return prepared;
  };

  /**
   * One transaction for a batch: lock and read every row it touches, run the steps, write, commit; rolled back (or
   * the connection dropped) on failure. Not durable: the decisions are answered once the writes are sent, while the
   * commit waits for the log flush (the rows stay locked until it is done, so the next decision on them sees them).
   */
  async function once(
    entries: readonly BatchEntry[],
    hexes: readonly string[],
    sent: { answered: boolean },
  ): Promise<void> {
    const session = await client.session();
    try {
      const results = await session.run(readStatements(table, hexes, session.fresh ? lockSeconds : undefined));
      const read = readRows((results[results.length - 1] ?? []) as Record<string, unknown>[]);
      const at = clock === 'database' && Number.isFinite(read.dbNow) ? () => read.dbNow : (e: BatchEntry) => e.nowMs;
      const outcomes = runSteps(entries, read.rows, at);
      const answer = () =>
        outcomes.forEach((o, i) => {
          if (o.ok) entries[i]?.resolve(o.value);
          else entries[i]?.reject(o.error);
        });
      const committed = session.run(writeStatements(table, read.rows, read.placeholders));
      if (!options.durable) {
        answer();
        sent.answered = true;
      }
      await committed;
      session.release(false);
      if (options.durable) answer();
    } catch (error) {
      const broken = await session.run(['ROLLBACK']).then(
        () => false,
        () => true,
      );
      session.release(broken);
      throw error;
    }
  }

  /**
   * A batch, retried whole when InnoDB picks it as a deadlock's victim before anything was answered. Once answered
   * (not durable), a retry would decide again on rows others may have changed since, and could take back nothing it
   * told: the failed writes are lost instead, as a crash before the commit loses them.
   */
  async function runBatch(entries: BatchEntry[]): Promise<void> {
    await prepare();
    const hexes = [...new Set(entries.flatMap((e) => e.hexes))];
    const sent = { answered: false };
    for (let attempt = 0; ; attempt++) {
      try {
        return await once(entries, hexes, sent);
      } catch (error) {
        if (sent.answered || (error as { errno?: unknown })?.errno !== 1213 || attempt >= DEADLOCK_RETRIES)
          throw mySqlError(error, table);
      }
    }
  }
  const enqueue = createBatcher(runBatch, { ...GROUP_COMMIT_BOUNDS, maxInFlight: options.maxInFlight });

  const update = <T>(ids: readonly string[], nowMs: number, step: StateStep<T>) =>
    new Promise<T>((resolve, reject) => {
      enqueue({ hexes: ids.map(idHex), nowMs, step, resolve: resolve as (v: unknown) => void, reject });
    });

  return {
    name: 'mysql',
    update,
    async sweep(nowMs, max) {
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
    },
    ready: prepare,
    // Decisions answered before their commit (durable: false) are on disk once close resolves.
    close: () => enqueue.drained(),
  };
}
