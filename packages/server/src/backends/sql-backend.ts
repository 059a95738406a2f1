/**
 * The SQL backend of `sluice serve --store`: opens PostgreSQL (`postgres://`), MySQL/MariaDB (`mysql://`) or SQLite
 * (`sqlite:PATH`) from a URL, builds sluice's store on it, and pings the database for health.
 */
import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SluiceError } from 'sluice';
import type { Logger } from '../observability/logger.js';
import type { StoreBackend } from './redis-backend.js';

/** `--store`: the database the counters live in. */
export interface SqlStoreOptions {
  /** `postgres://user@host:port/db`, `mysql://user@host:port/db` or `sqlite:PATH`. */
  url: string;
  /** Longest wait for the database per decision, in ms; then the failure policy answers. @default 500 */
  timeoutMs?: number;
  /** How long to wait for the database at start before starting anyway (degraded). @default 5000 */
  connectTimeoutMs?: number;
  /** After a start without the database, how often to try again until it answers (health says `starting` until then). @default 1000 */
  readyRetryMs?: number;
}

/** Connections the service's pool opens to PostgreSQL or MySQL. */
const POOL_SIZE = 8;

/**
 * The URL with its password hidden, for logs and errors: all between the user name's ':' and the last '@' of the
 * authority (a password may hold '@' and ':'), and a `password=` parameter.
 */
export function redactStoreUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:/?#@]*:)[^/?#]*@/i, '$1***@').replace(/([?&]password=)[^&#]*/gi, '$1***');
}

/** Which database a `--store` URL names, checked as far as it can be without connecting; a coded error otherwise. */
export function sqlKind(url: string): 'postgres' | 'mysql' | 'sqlite' {
  const kind = kindOf(url);
  if (kind === 'sqlite') sqliteTarget(url);
  else serverUrl(url);
  return kind;
}

function kindOf(url: string): 'postgres' | 'mysql' | 'sqlite' {
  if (/^postgres(ql)?:\/\//i.test(url)) return 'postgres';
  if (/^(mysql|mariadb):\/\//i.test(url)) return 'mysql';
  if (/^sqlite:./i.test(url)) return 'sqlite';
  throw new SluiceError(
    'ERR_SLUICE_STORE_UNSUPPORTED',
    `--store: ${shown(url)} is not a store URL; use postgres://…, mysql://… or sqlite:PATH`,
    { option: 'store' },
  );
}

/** The URL as errors show it: password hidden, bounded. */
const shown = (url: string) => JSON.stringify(redactStoreUrl(url).slice(0, 200));

const invalidStore = (url: string, problem: string) =>
  new SluiceError('ERR_SLUICE_INVALID_OPTION', `--store: ${shown(url)} ${problem}`, { option: 'store' });

/** A PostgreSQL or MySQL URL must parse and name a host (the drivers would fail later, less clearly). */
function serverUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidStore(
      url,
      'is not a valid URL; check the port, and percent-encode special characters of the user and password',
    );
  }
  if (parsed.hostname === '') throw invalidStore(url, 'names no host; use postgres://user@host:5432/db');
}

/** The most `lockTimeoutMs` a `sqlite:` URL may ask for: the wait blocks the event loop. */
const SQLITE_MAX_LOCK_TIMEOUT_MS = 60_000;

/**
 * A `sqlite:` URL's file and lock wait: `sqlite:PATH` or `sqlite:PATH?lockTimeoutMs=50` (how long a decision may
 * block the event loop waiting for another process's write lock; default the decision timeout). The file's folder
 * must exist (SQLite creates the file, not folders).
 */
export function sqliteTarget(url: string): { path: string; lockTimeoutMs?: number } {
  const [path = '', query] = url.replace(/^sqlite:(\/\/)?/i, '').split('?', 2);
  if (path === '') throw invalidStore(url, 'names no file; use sqlite:/var/lib/sluice/limits.db');
  if (path !== ':memory:' && !isFolder(dirname(resolve(path))))
    throw invalidStore(url, `is in a folder that does not exist (${dirname(resolve(path))}); create it first`);
  if (query === undefined) return { path };
  const params = new URLSearchParams(query);
  for (const name of params.keys())
    if (name !== 'lockTimeoutMs')
      throw invalidStore(url, `has an unknown parameter ${name}; the one known is lockTimeoutMs`);
  const text = params.get('lockTimeoutMs') ?? '';
  const lockTimeoutMs = Number(text);
  if (
    text.trim() === '' ||
    !Number.isFinite(lockTimeoutMs) ||
    lockTimeoutMs < 0 ||
    lockTimeoutMs > SQLITE_MAX_LOCK_TIMEOUT_MS
  )
    throw invalidStore(url, `lockTimeoutMs: expected a number of ms from 0 to ${SQLITE_MAX_LOCK_TIMEOUT_MS}`);
  return { path, lockTimeoutMs };
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The store on one database, its health ping and its close. */
async function openDatabase(options: SqlStoreOptions): Promise<StoreBackend> {
  const timeoutMs = options.timeoutMs ?? 500;
  const kind = sqlKind(options.url);
  if (kind === 'postgres') {
    const { default: pg } = await import('pg');
    const { createPostgresStore } = await import('sluice/postgres');
    const pool = new pg.Pool({ connectionString: options.url, max: POOL_SIZE, connectionTimeoutMillis: timeoutMs });
    // A connection lost while idle (the database restarted) is dropped by the pool, not thrown at the process.
    pool.on('error', () => {});
    const store = createPostgresStore({ client: pool, timeoutMs });
    return { store, owned: true, ping: () => pool.query('SELECT 1'), close: () => pool.end() };
  }
  if (kind === 'mysql') {
    const mysql = await import('mysql2/promise');
    const { createMySqlStore } = await import('sluice/mysql');
    const uri = options.url.replace(/^mariadb:/i, 'mysql:');
    const pool = mysql.createPool({ uri, connectionLimit: POOL_SIZE, multipleStatements: true, connectTimeout: 5000 });
    const store = createMySqlStore({ client: pool, timeoutMs });
    return { store, owned: true, ping: () => pool.query('SELECT 1'), close: () => pool.end() };
  }
  const { default: Database } = await import('better-sqlite3');
  const { createSqliteStore } = await import('sluice/sqlite');
  const target = sqliteTarget(options.url);
  const db = new Database(target.path);
  const lockTimeoutMs = target.lockTimeoutMs ?? timeoutMs;
  const store = createSqliteStore({ db, timeoutMs, lockTimeoutMs });
  return {
    store,
    owned: true,
    ping: async () => sqliteWritable(db, lockTimeoutMs),
    close: async () => void db.close(),
  };
}

/** Longest the health ping waits for SQLite's write lock: it blocks the event loop (better-sqlite3 is synchronous). */
const SQLITE_PING_WAIT_MS = 25;

/**
 * Health for SQLite: can this process take the file's write lock now (an empty write transaction)? Another process
 * holding it past a short wait, or a file that cannot be written, is the store being down. Synchronous, so no
 * decision's transaction on this connection can be open meanwhile.
 */
function sqliteWritable(
  db: { pragma(text: string): unknown; exec(text: string): unknown },
  lockTimeoutMs: number,
): void {
  db.pragma(`busy_timeout = ${SQLITE_PING_WAIT_MS}`);
  try {
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
  } finally {
    // Back to the store's own wait (createSqliteStore set busy_timeout to lockTimeoutMs).
    db.pragma(`busy_timeout = ${Math.ceil(lockTimeoutMs)}`);
  }
}

/**
 * Opens the database and waits for it up to `connectTimeoutMs`; past that the service starts degraded, decisions
 * retry the database, and the store is asked again every `readyRetryMs` until it is ready (health leaves `starting`).
 */
export async function createSqlBackend(options: SqlStoreOptions, logger: Logger): Promise<StoreBackend> {
  const backend = await openDatabase(options);
  const store = backend.store as ReadyStore;
  const log = { store: redactStoreUrl(options.url) };
  try {
    await store.ready?.(options.connectTimeoutMs ?? 5000);
    logger.info(log, 'store ready');
    return backend;
  } catch (error) {
    logger.warn(
      { ...log, code: (error as SluiceError).code, err: (error as Error).message },
      'store not ready; starting degraded (the failure policy answers until it is)',
    );
  }
  const stop = retryUntilReady(store, options.readyRetryMs ?? 1000, () => logger.info(log, 'store ready'));
  return {
    ...backend,
    close: () => {
      stop();
      return backend.close();
    },
  };
}

/** A store that can say when it is ready. */
type ReadyStore = { ready?: (ms?: number) => Promise<void> };

/**
 * Asks `store.ready()` every `everyMs` until it resolves, then calls `onReady`; the returned function stops asking.
 * The store's readiness is what health reports: without asking again it would say `starting` forever.
 */
function retryUntilReady(store: ReadyStore, everyMs: number, onReady: () => void): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const attempt = () => {
    store.ready?.(everyMs).then(
      () => {
        if (!stopped) onReady();
      },
      () => {
        if (!stopped) timer = setTimeout(attempt, everyMs).unref();
      },
    );
  };
  timer = setTimeout(attempt, everyMs).unref();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
