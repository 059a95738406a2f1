/**
 * createPostgresStore: sluice's limits kept in a PostgreSQL table, exact across processes, for `pg` (a Pool or a
 * Client) and `postgres` (postgres.js) — every algorithm through the store kit, the database's clock by default.
 */
import { SluiceError } from '../../core/errors.js';
import { createKitStore, type KitStore, type KitStoreOptions } from '../kit/kit-store.js';
import { groupCommitInFlight } from './group-commit.js';
import { createPostgresBackend } from './postgres-backend.js';
import { postgresClientKind, postgresClientSize, postgresSessions } from './postgres-sessions.js';
import { tableName } from './sql-text.js';

/** Options of {@link createPostgresStore}. */
export interface PostgresStoreOptions extends KitStoreOptions {
  /**
   * A `pg` Pool (recommended: decisions run side by side), a connected `pg` Client (one transaction at a time) or a
   * `postgres` (postgres.js) sql instance.
   */
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
  /**
   * Most ms a decision waits for another's lock on the same key, more than 0 (PostgreSQL's lock_timeout: whole ms,
   * rounded up, at most 2147483647). @default timeoutMs
   */
  lockTimeoutMs?: number;
  /**
   * Wait for every decision's commit to reach the disk. Off by default: counters are committed with
   * `synchronous_commit = off` (these transactions only), so a crash of PostgreSQL can forget the last fraction of a
   * second of counts — as Redis's default persistence does — while a decision costs no disk flush. Decisions stay
   * exact between processes either way. @default false
   */
  durable?: boolean;
}

/** The most lock_timeout PostgreSQL takes (an int of ms). */
const MAX_LOCK_TIMEOUT_MS = 2_147_483_647;

/**
 * lockTimeoutMs as PostgreSQL's lock_timeout: whole ms rounded up, so a fraction never becomes 0, which PostgreSQL
 * reads as "wait forever" (0 is refused, as MySQL does; out of range, every decision failed at the database).
 */
function lockTimeout(ms: number): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0 || ms > MAX_LOCK_TIMEOUT_MS)
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `lockTimeoutMs: must be a number of ms > 0 and at most ${MAX_LOCK_TIMEOUT_MS}, got ${String(ms)}`,
      { option: 'lockTimeoutMs' },
    );
  return Math.ceil(ms);
}

/**
 * Creates a store that keeps counters in PostgreSQL (9.5 or later), shared by every process that uses the table.
 * Decisions are transactions of two round trips (lock the keys and read their rows, then write and commit), and
 * decisions that arrive while transactions run share the next ones (group commit), so many callers cost a fraction
 * of a round trip each.
 * Rows are written only for admitted requests and blocks, and expired rows are deleted now and then in the
 * background (`sweepEvery`), never by a timer per key.
 * @example
 * import pg from 'pg';
 * const store = createPostgresStore({ client: new pg.Pool({ connectionString: 'postgres://app@db/app' }) });
 * await store.ready();
 */
export function createPostgresStore(options: PostgresStoreOptions): KitStore {
  const kind = postgresClientKind(options.client);
  if (kind === undefined)
    throw new SluiceError(
      'ERR_SLUICE_INVALID_STORE',
      'createPostgresStore: client must be a pg Pool or Client (new pg.Pool({ connectionString })) or a postgres.js sql (postgres(url))',
      { option: 'client' },
    );
  const clock = options.clock ?? 'database';
  if (clock !== 'database' && clock !== 'client')
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `clock: expected 'database' or 'client', got ${String(clock)}`, {
      option: 'clock',
    });
  const backend = createPostgresBackend({
    session: postgresSessions(options.client, kind),
    table: tableName(options.table ?? 'sluice_state'),
    clock,
    // Without its own, the decision's timeout bounds the lock wait (the kit validates timeoutMs).
    lockTimeoutMs:
      options.lockTimeoutMs === undefined
        ? Math.min(Math.ceil(options.timeoutMs ?? 500), MAX_LOCK_TIMEOUT_MS)
        : lockTimeout(options.lockTimeoutMs),
    createTable: options.createTable ?? true,
    durable: options.durable ?? false,
    // Decisions arriving while these run share the next ones.
    maxInFlight: groupCommitInFlight(postgresClientSize(options.client, kind)),
  });
  return createKitStore(backend, options);
}
