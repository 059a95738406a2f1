/**
 * `npm run bench -- stores`: sluice's SQL stores against rate-limiter-flexible's store for the same database, in the
 * same run on the same server — decisions/s at 1 and 64 concurrent callers (as a ratio), and rows and bytes per key:
 * PostgreSQL (RateLimiterPostgres), MySQL/MariaDB (RateLimiterMySQL) and SQLite on better-sqlite3 (RateLimiterSQLite).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2';
import pg from 'pg';
import { RateLimiterMySQL, RateLimiterPostgres, RateLimiterSQLite } from 'rate-limiter-flexible';
import { resolvePolicy } from 'sluice';
import { createMySqlStore } from 'sluice/mysql';
import { createPostgresStore } from 'sluice/postgres';
import { createSqliteStore } from 'sluice/sqlite';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const KEYS = 10_000;
const POINTS = 1_000_000;
const policy = resolvePolicy({ algorithm: 'fixed-window', limit: POINTS, period: '1h' });

/** Decisions per second of `decide` with `callers` callers each awaiting its previous decision, over SECONDS. */
async function rate(callers: number, decide: (key: string) => Promise<unknown>): Promise<number> {
  let done = 0;
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < end) {
        await decide(`k${Math.floor(Math.random() * KEYS)}`);
        done++;
      }
    }),
  );
  return done / SECONDS;
}

/** A store under test: one decision, and after the runs its rows and bytes on disk. */
interface Side {
  decide(key: string): Promise<unknown>;
  size(): Promise<{ rows: number; bytes: number }>;
}

/** Prints one database's table: decisions/s of both at 1 and 64 callers, then rows and bytes per key. */
async function compare(database: string, ours: Side, theirs: Side): Promise<void> {
  console.log(`\n${database}\n`);
  console.log('| callers | sluice decisions/s | rate-limiter-flexible decisions/s | ratio |');
  console.log('| --- | --- | --- | --- |');
  for (const callers of [1, 64]) {
    const a = await rate(callers, ours.decide);
    const b = await rate(callers, theirs.decide);
    console.log(`| ${callers} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${(a / b).toFixed(2)}× |`);
  }
  for (const [name, side] of [
    ['sluice', ours],
    ['rate-limiter-flexible', theirs],
  ] as const) {
    const { rows, bytes } = await side.size();
    console.log(`${name}: ${rows} rows for ${rows} keys, ${(bytes / rows).toFixed(0)} bytes per key on disk`);
  }
}

/** rate-limiter-flexible's constructors report their table through a callback. */
const made = <T>(make: (cb: (error?: Error) => void) => T) =>
  new Promise<T>((resolve, reject) => {
    const limiter: T = make((error) => (error ? reject(error) : resolve(limiter)));
  });

async function postgres(): Promise<void> {
  const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 16 });
  await pool.query('DROP TABLE IF EXISTS bench_sluice; DROP TABLE IF EXISTS bench_rlf');
  const store = createPostgresStore({ client: pool, table: 'bench_sluice', localCache: false, timeoutMs: 10_000 });
  await store.ready();
  const rlf = await made(
    (cb) =>
      new RateLimiterPostgres(
        {
          storeClient: pool,
          storeType: 'pool',
          tableName: 'bench_rlf',
          points: POINTS,
          duration: 3600,
          clearExpiredByTimeout: false,
        },
        cb,
      ),
  );
  const size = (table: string) => async () => {
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n, pg_total_relation_size('${table}')::bigint AS bytes FROM ${table}`,
    );
    return { rows: Number(rows[0].n), bytes: Number(rows[0].bytes) };
  };
  await compare(
    'PostgreSQL (pg Pool, 16 connections)',
    { decide: async (key) => store.check(key, policy, 1, Date.now(), true), size: size('bench_sluice') },
    { decide: (key) => rlf.consume(key, 1), size: size('bench_rlf') },
  );
  await pool.query('DROP TABLE IF EXISTS bench_sluice; DROP TABLE IF EXISTS bench_rlf');
  await store.close();
  await pool.end();
}

async function mySql(): Promise<void> {
  const at = { host: '127.0.0.1', port: 3306, user: 'root', database: 'test', connectionLimit: 16 };
  const pool = mysql.createPool({ ...at, multipleStatements: true });
  const query = (sql: string) => pool.promise().query(sql);
  await query('DROP TABLE IF EXISTS bench_sluice');
  await query('DROP TABLE IF EXISTS bench_rlf');
  const store = createMySqlStore({ client: pool, table: 'bench_sluice', localCache: false, timeoutMs: 10_000 });
  await store.ready();
  const rlf = await made(
    (cb) =>
      new RateLimiterMySQL(
        {
          storeClient: pool,
          storeType: 'pool',
          dbName: 'test',
          tableName: 'bench_rlf',
          points: POINTS,
          duration: 3600,
          clearExpiredByTimeout: false,
        },
        cb,
      ),
  );
  const size = (table: string) => async () => {
    await query(`ANALYZE TABLE ${table}`);
    const [rows] = (await query(
      `SELECT (SELECT count(*) FROM ${table}) AS n, data_length + index_length AS bytes FROM information_schema.tables WHERE table_schema = 'test' AND table_name = '${table}'`,
    )) as unknown as [{ n: number; bytes: number }[]];
    return { rows: Number(rows[0]?.n), bytes: Number(rows[0]?.bytes) };
  };
  await compare(
    'MySQL / MariaDB 10.11 (mysql2 pool, 16 connections, multipleStatements)',
    { decide: async (key) => store.check(key, policy, 1, Date.now(), true), size: size('bench_sluice') },
    { decide: (key) => rlf.consume(key, 1), size: size('bench_rlf') },
  );
  await query('DROP TABLE IF EXISTS bench_sluice');
  await query('DROP TABLE IF EXISTS bench_rlf');
  await store.close();
  await new Promise((resolve) => pool.end(resolve));
}

async function sqlite(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  // Each library on its own file (WAL), so bytes per key are each file's.
  const ours = new Database(join(dir, 'sluice.db'));
  const theirs = new Database(join(dir, 'rlf.db'));
  theirs.pragma('journal_mode = WAL');
  const store = createSqliteStore({ db: ours, localCache: false, timeoutMs: 10_000 });
  await store.ready();
  const rlf = await made(
    (cb) =>
      new RateLimiterSQLite(
        {
          storeClient: theirs,
          storeType: 'better-sqlite3',
          tableName: 'bench_rlf',
          points: POINTS,
          duration: 3600,
          clearExpiredByTimeout: false,
        },
        cb,
      ),
  );
  const size = (db: Database.Database, table: string, file: string) => async () => {
    db.pragma('wal_checkpoint(TRUNCATE)');
    const rows = Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
    return { rows, bytes: statSync(join(dir, file)).size };
  };
  await compare(
    'SQLite (better-sqlite3, one file each, WAL)',
    {
      decide: async (key) => store.check(key, policy, 1, Date.now(), true),
      size: size(ours, 'sluice_state', 'sluice.db'),
    },
    { decide: (key) => rlf.consume(key, 1), size: size(theirs, 'bench_rlf', 'rlf.db') },
  );
  await store.close();
  ours.close();
  theirs.close();
  rmSync(dir, { recursive: true, force: true });
}

const only = process.env.BENCH_STORES?.split(',');
for (const [name, run] of [
  ['postgres', postgres],
  ['mysql', mySql],
  ['sqlite', sqlite],
] as const)
  if (only === undefined || only.includes(name)) await run();
