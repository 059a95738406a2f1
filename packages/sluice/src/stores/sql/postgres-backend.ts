/**
 * The PostgreSQL backend of the store kit: decisions grouped into transactions (group commit) on pooled connections,
 * made exact across processes by advisory locks on the rows' ids (a row that does not exist yet is locked too), in
 * two round trips per transaction however many decisions share it.
 */
import { SluiceError } from '../../core/errors.js';
import type { StateBackend, StateStep } from '../kit/state-backend.js';
import { type BatchEntry, type BatchRows, createBatcher, GROUP_COMMIT_BOUNDS, runSteps } from './group-commit.js';
import { idHex, lockHash, sqlNumber, stateLiteral } from './sql-text.js';

/** A connection that runs SQL text (several statements at once) and gives back each statement's rows. */
export interface SqlSession {
  run(text: string): Promise<Record<string, unknown>[][]>;
  /** Back to the pool; `broken`: the connection is in an unknown state and must be dropped. */
  release(broken: boolean): void;
}

/** Options of the PostgreSQL backend. */
export interface PostgresBackendOptions {
  /** Gets a connection of its own for one transaction. */
  session(): Promise<SqlSession>;
  /** Quoted table name. */
  table: string;
  /** Whose clock decides: the database's (default) or the `nowMs` the limiter passes. */
  clock: 'database' | 'client';
  /** Most ms a transaction waits for another's lock before it fails (and the failure policy answers). */
  lockTimeoutMs: number;
  /** Creates the table when missing. */
  createTable: boolean;
  /** Waits for each decision's commit to reach disk (false: `synchronous_commit = off` for these transactions). */
  durable: boolean;
  /** Most transactions this process runs at once (decisions arriving meanwhile share the next ones). */
  maxInFlight: number;
}

/** The table the PostgreSQL store keeps its rows in (also the documented migration). */
export function postgresTableSql(table: string): string {
  const index = `"${table.replace(/"/g, '').replace(/\./g, '_')}_expires"`;
  return `CREATE TABLE IF NOT EXISTS ${table} (id bytea PRIMARY KEY, state text NOT NULL, expires_at double precision NOT NULL);
CREATE INDEX IF NOT EXISTS ${index} ON ${table} (expires_at);`;
}

/** The database's clock in whole ms since the epoch. */
const DB_NOW = '(floor(extract(epoch from clock_timestamp()) * 1000))::float8';

/** A PostgreSQL error as sluice's: a missing table or a permission says what to run. */
export function postgresError(error: unknown, table: string): unknown {
  const code = (error as { code?: unknown })?.code;
  if (code === '42P01')
    return new SluiceError(
      'ERR_SLUICE_STORE_TABLE_MISSING',
      `PostgreSQL has no table ${table}: run the migration (postgresTableSql() in sluice/postgres: ${postgresTableSql(table).split('\n')[0]}) or pass createTable: true`,
      { cause: error },
    );
  if (code === '42501')
    return new SluiceError(
      'ERR_SLUICE_STORE_PERMISSION',
      `PostgreSQL refused access to ${table}: GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO the store's role (and CREATE on the schema for createTable)`,
      { cause: error },
    );
  return error;
}

/** The first statement: begin, lock the ids in a fixed order (no deadlocks), read the rows and the clock. */
function readSql(table: string, hexes: readonly string[], lockTimeoutMs: number, durable: boolean): string {
  const classId = lockHash(table);
  const locks = [...new Set(hexes.map(lockHash))].sort((a, b) => a - b);
  const list = hexes.map((h) => `'\\x${h}'::bytea`).join(',');
  const commit = durable ? '' : ' SET LOCAL synchronous_commit = off;';
  return `BEGIN; SET LOCAL lock_timeout = ${sqlNumber(lockTimeoutMs)};${commit}
SELECT ${locks.map((l) => `pg_advisory_xact_lock(${classId}, ${l})`).join(', ')};
SELECT encode(id, 'hex') AS id, state, expires_at, ${DB_NOW} AS now FROM ${table} WHERE id IN (${list});
SELECT ${DB_NOW} AS now;`;
}

/** The second statement: the batch's writes (each row once, as the last step left it) and the commit. */
function writeSql(table: string, rows: BatchRows): string {
  const upserts: string[] = [];
  const deletes: string[] = [];
  for (const hex of rows.dirty) {
    const id = `'\\x${hex}'::bytea`;
    const row = rows.rows.get(hex);
    if (row === undefined) deletes.push(id);
    else upserts.push(`(${id}, ${stateLiteral(row.state)}, ${sqlNumber(row.expiresAt)})`);
  }
  let text = '';
  if (upserts.length > 0)
    text += `INSERT INTO ${table} (id, state, expires_at) VALUES ${upserts.join(',')} ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, expires_at = EXCLUDED.expires_at;`;
  if (deletes.length > 0) text += `DELETE FROM ${table} WHERE id IN (${deletes.join(',')});`;
  return `${text}COMMIT;`;
}

/** A concurrent CREATE … IF NOT EXISTS that lost the race (unique_violation, duplicate_table, duplicate_object) is no error. */
function ignoreCreateRace(error: unknown): void {
  const code = (error as { code?: unknown })?.code;
  if (code !== '23505' && code !== '42P07' && code !== '42710') throw error;
}

/** Creates the table when told to, and checks it can be read. */
async function prepareTable(options: PostgresBackendOptions): Promise<void> {
  const { table } = options;
  const session = await options.session();
  try {
    // Processes starting together may race to create the table: the loser's duplicate error means it is there.
    if (options.createTable) await session.run(postgresTableSql(table)).catch(ignoreCreateRace);
    await session.run(`SELECT 1 FROM ${table} LIMIT 1`);
    session.release(false);
  } catch (error) {
    session.release(false);
    throw postgresError(error, table);
  }
}

/** Creates the PostgreSQL backend (createPostgresStore wraps it in the kit). */
export function createPostgresBackend(options: PostgresBackendOptions): StateBackend {
  const { table, clock, lockTimeoutMs } = options;
  let prepared: Promise<void> | undefined;

  /** Makes or finds the table once; a failure (the database not reachable yet, too) is tried again on the next use. */
  const prepare = () => {
    prepared ??= prepareTable(options).catch((error: unknown) => {
      prepared = undefined;
      throw error;
    });
    return prepared;
  };

  /** One transaction for a batch: lock and read every row the batch touches, run the steps, write, commit. */
  async function runBatch(entries: BatchEntry[]): Promise<void> {
    await prepare();
    const hexes = [...new Set(entries.flatMap((e) => e.hexes))];
    const session = await options.session();
    try {
      const results = await session.run(readSql(table, hexes, lockTimeoutMs, options.durable));
      const read = results[results.length - 2] ?? [];
      const dbNow = Number(results[results.length - 1]?.[0]?.now);
      const rows: BatchRows = { rows: new Map(), dirty: new Set() };
      for (const row of read)
        rows.rows.set(String(row.id), { state: String(row.state), expiresAt: Number(row.expires_at) });
      const outcomes = runSteps(entries, rows, (e) => (clock === 'database' ? dbNow : e.nowMs));
      await session.run(writeSql(table, rows));
      session.release(false);
      outcomes.forEach((o, i) => {
        if (o.ok) entries[i]?.resolve(o.value);
        else entries[i]?.reject(o.error);
      });
    } catch (error) {
      // Roll back on the same connection; a connection that cannot even do that is dropped.
      const broken = await session.run('ROLLBACK').then(
        () => false,
        () => true,
      );
      session.release(broken);
      throw postgresError(error, table);
    }
  }
  const enqueue = createBatcher(runBatch, { ...GROUP_COMMIT_BOUNDS, maxInFlight: options.maxInFlight });

  const update = <T>(ids: readonly string[], nowMs: number, step: StateStep<T>) =>
    new Promise<T>((resolve, reject) => {
      enqueue({ hexes: ids.map(idHex), nowMs, step, resolve: resolve as (v: unknown) => void, reject });
    });

  return {
    name: 'postgres',
    update,
    async sweep(nowMs, max) {
      const session = await options.session();
      try {
        const at = clock === 'database' ? DB_NOW : sqlNumber(nowMs);
        const results = await session.run(
          `WITH gone AS (DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE expires_at <= ${at} LIMIT ${sqlNumber(max)})) RETURNING 1) SELECT count(*)::int AS n FROM gone;`,
        );
        session.release(false);
        return Number(results[0]?.[0]?.n ?? 0);
      } catch (error) {
        session.release(true);
        throw postgresError(error, table);
      }
    },
    ready: prepare,
    async close() {},
  };
}
