/**
 * The two sides of `npm run bench -- stores` for one database: sluice's SQL store and rate-limiter-flexible's store
 * for the same database, each as "decide on a key" (allowed or not) — shared by the bench and its exactness children.
 */
import Database from 'better-sqlite3';
import mysql from 'mysql2';
import pg from 'pg';
import {
  type RateLimiterAbstract,
  RateLimiterMySQL,
  RateLimiterPostgres,
  RateLimiterSQLite,
} from 'rate-limiter-flexible';
import { resolvePolicy } from 'sluice';
import { createMySqlStore } from 'sluice/mysql';
import { createPostgresStore } from 'sluice/postgres';
import { createSqliteStore } from 'sluice/sqlite';
import type { KitStore } from 'sluice/testing';

/** The databases compared. */
export type DatabaseName = 'postgres' | 'mysql' | 'sqlite';
/** The tables (SQLite: files in `dir`) each library keeps its rows in. */
export const TABLES = { sluice: 'bench_sluice', rlf: 'bench_rlf' } as const;

/** One library on one database: a decision, and the end of its connections. */
export interface Side {
  decide(key: string): Promise<boolean>;
  close(): Promise<void>;
}
/** Both libraries on one database, sharing its client (a pool, or one SQLite file each in `dir`). */
export interface Sides {
  sluice: Side;
  /** sluice answering only once each decision's commit is on disk (PostgreSQL, MySQL; SQLite always is). */
  durable?: Side;
  rlf: Side;
  /** Runs SQL on the shared client (PostgreSQL, MySQL) or on a library's file (SQLite). */
  query(sql: string, library?: 'sluice' | 'rlf'): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

/** rate-limiter-flexible's constructors report their table through a callback. */
const made = <T>(make: (cb: (error?: Error) => void) => T) =>
  new Promise<T>((resolve, reject) => {
    const limiter: T = make((error) => (error ? reject(error) : resolve(limiter)));
  });

/** rate-limiter-flexible's answer as allowed or not: it rejects with its result when over the limit, an Error on failure. */
const consume = (limiter: RateLimiterAbstract) => (key: string) =>
  limiter.consume(key, 1).then(
    () => true,
    (reason: unknown) => {
      if (reason instanceof Error) throw reason;
      return false;
    },
  );

/** Options both libraries are given: the limit (`points`) per hour, the pool's size, the SQLite files' directory. */
interface SideOptions {
  points: number;
  poolSize: number;
  dir: string;
}

/** sluice's store as a side: fixed window, `points` an hour, on the database's clock. */
function sluiceSide(store: KitStore, points: number): Side {
  const policy = resolvePolicy({ algorithm: 'fixed-window', limit: points, period: '1h' });
  return {
    decide: async (key) => (await store.check(key, policy, 1, Date.now(), true)).allowed,
    close: () => store.close(),
  };
}

async function postgresSides({ points, poolSize }: SideOptions): Promise<Sides> {
  const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: poolSize });
  const ours = { client: pool, table: TABLES.sluice, localCache: false, timeoutMs: 10_000 };
  const store = createPostgresStore(ours);
  await store.ready();
  const durable = createPostgresStore({ ...ours, durable: true });
  const opts = { storeClient: pool, storeType: 'pool', tableName: TABLES.rlf, clearExpiredByTimeout: false };
  const rlf = await made((cb) => new RateLimiterPostgres({ ...opts, points, duration: 3600 }, cb));
  return {
    sluice: sluiceSide(store, points),
    durable: sluiceSide(durable, points),
    rlf: { decide: consume(rlf), close: async () => {} },
    query: async (sql) => (await pool.query(sql)).rows,
    close: () => pool.end(),
  };
}

async function mySqlSides({ points, poolSize }: SideOptions): Promise<Sides> {
  const at = { host: '127.0.0.1', port: 3306, user: 'root', database: 'test', connectionLimit: poolSize };
  const pool = mysql.createPool({ ...at, multipleStatements: true });
  const ours = { client: pool, table: TABLES.sluice, localCache: false, timeoutMs: 10_000 };
  const store = createMySqlStore(ours);
  await store.ready();
  const durable = createMySqlStore({ ...ours, durable: true });
  const opts = { storeClient: pool, storeType: 'pool', dbName: 'test', tableName: TABLES.rlf };
  const rlf = await made(
    (cb) => new RateLimiterMySQL({ ...opts, points, duration: 3600, clearExpiredByTimeout: false }, cb),
  );
  return {
    sluice: sluiceSide(store, points),
    durable: sluiceSide(durable, points),
    rlf: { decide: consume(rlf), close: async () => {} },
    query: async (sql) => (await pool.promise().query(sql))[0] as Record<string, unknown>[],
    close: () => new Promise((resolve) => pool.end(() => resolve())),
  };
}

async function sqliteSides({ points, dir }: SideOptions): Promise<Sides> {
  // Each library on its own file (WAL), so bytes per key are each file's; both wait up to 10 s for the write lock.
  const ours = new Database(`${dir}/sluice.db`);
  const theirs = new Database(`${dir}/rlf.db`);
  theirs.pragma('journal_mode = WAL');
  theirs.pragma('busy_timeout = 10000');
  const store = createSqliteStore({ db: ours, localCache: false, timeoutMs: 10_000 });
  await store.ready();
  const opts = { storeClient: theirs, storeType: 'better-sqlite3', tableName: TABLES.rlf };
  const rlf = await made(
    (cb) => new RateLimiterSQLite({ ...opts, points, duration: 3600, clearExpiredByTimeout: false }, cb),
  );
  return {
    sluice: sluiceSide(store, points),
    rlf: { decide: consume(rlf), close: async () => {} },
    query: async (sql, library = 'sluice') =>
      (library === 'sluice' ? ours : theirs).prepare(sql).all() as Record<string, unknown>[],
    close: async () => {
      ours.close();
      theirs.close();
    },
  };
}

/** Both libraries on `database`, limiting to `points` an hour. */
export function openSides(database: DatabaseName, options: SideOptions): Promise<Sides> {
  if (database === 'postgres') return postgresSides(options);
  return database === 'mysql' ? mySqlSides(options) : sqliteSides(options);
}
