/**
 * createPostgresStore: sluice's limits kept in a PostgreSQL table, exact across processes, for `pg` (a Pool or a
 * Client) — every algorithm through the store kit, the database's clock by default.
 */
import { SluiceError } from '../../core/errors.js';
import { createKitStore, type KitStore, type KitStoreOptions } from '../kit/kit-store.js';
import { createPostgresBackend, type SqlSession } from './postgres-backend.js';
import { tableName } from './sql-text.js';

/** What sluice needs of a `pg` result: its rows. */
interface PgResult {
  rows: Record<string, unknown>[];
}
/** A `pg` Client or a Pool's client, as far as sluice uses it. */
interface PgQueryable {
  query(text: string): Promise<PgResult | PgResult[]>;
}
/** A `pg` Pool, as far as sluice uses it. */
interface PgPool extends PgQueryable {
  connect(): Promise<PgQueryable & { release(error?: Error | boolean): void }>;
  readonly totalCount: number;
}

/** Options of {@link createPostgresStore}. */
export interface PostgresStoreOptions extends KitStoreOptions {
  /** A `pg` Pool (recommended: decisions run side by side) or a connected `pg` Client (one at a time). */
  client: unknown;
  /** The table, `name` or `schema.name`. @default 'sluice_state' */
  table?: string;
  /** Creates the table (and its index) when missing; false when a migration does (see postgresTableSql). @default true */
  createTable?: boolean;
  /**
   * Whose clock decides: `'database'` (PostgreSQL's, so application servers with skewed clocks agree) or
   * `'client'` (the `nowMs` the limiter passes: tests with a manual clock). @default 'database'
   */
  clock?: 'database' | 'client';
  /** Most ms a decision waits for another's lock on the same key. @default timeoutMs */
  lockTimeoutMs?: number;
  /**
   * Wait for every decision's commit to reach the disk. Off by default: counters are committed with
   * `synchronous_commit = off` (these transactions only), so a crash of PostgreSQL can forget the last fraction of a
   * second of counts — as Redis's default persistence does — while a decision costs no disk flush. Decisions stay
   * exact between processes either way. @default false
   */
  durable?: boolean;
}

const rowsOf = (result: PgResult | PgResult[]) => (Array.isArray(result) ? result : [result]).map((r) => r.rows ?? []);

/** Sessions on a Pool: a pooled connection per transaction. */
function poolSessions(pool: PgPool): () => Promise<SqlSession> {
  return async () => {
    const connection = await pool.connect();
    return {
      run: async (text) => rowsOf(await connection.query(text)),
      release: (broken) => connection.release(broken ? true : undefined),
    };
  };
}

/** Sessions on one Client: transactions take turns, since a connection holds one transaction at a time. */
function clientSessions(client: PgQueryable): () => Promise<SqlSession> {
  let turn: Promise<void> = Promise.resolve();
  return async () => {
    let done!: () => void;
    const previous = turn;
    turn = new Promise<void>((resolve) => {
      done = resolve;
    });
    await previous;
    return { run: async (text) => rowsOf(await client.query(text)), release: () => done() };
  };
}

/**
 * Creates a store that keeps counters in PostgreSQL (9.5 or later), shared by every process that uses the table.
 * Each decision is one transaction in two round trips: lock the keys and read their rows, then write and commit.
 * Rows are written only for admitted requests and blocks, and expired rows are deleted now and then in the
 * background (`sweepEvery`), never by a timer per key.
 * @example
 * import pg from 'pg';
 * const store = createPostgresStore({ client: new pg.Pool({ connectionString: 'postgres://app@db/app' }) });
 * await store.ready();
 */
export function createPostgresStore(options: PostgresStoreOptions): KitStore {
  const client = options.client as Partial<PgPool> | undefined;
  if (client === null || typeof client !== 'object' || typeof client.query !== 'function')
    throw new SluiceError(
      'ERR_SLUICE_INVALID_STORE',
      'createPostgresStore: client must be a pg Pool or Client (new pg.Pool({ connectionString }))',
      { option: 'client' },
    );
  const clock = options.clock ?? 'database';
  if (clock !== 'database' && clock !== 'client')
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `clock: expected 'database' or 'client', got ${String(clock)}`, {
      option: 'clock',
    });
  const isPool = typeof client.connect === 'function' && typeof client.totalCount === 'number';
  const backend = createPostgresBackend({
    session: isPool ? poolSessions(client as PgPool) : clientSessions(client as PgQueryable),
    table: tableName(options.table ?? 'sluice_state'),
    clock,
    lockTimeoutMs: options.lockTimeoutMs ?? options.timeoutMs ?? 500,
    createTable: options.createTable ?? true,
    durable: options.durable ?? false,
  });
  return createKitStore(backend, options);
}
