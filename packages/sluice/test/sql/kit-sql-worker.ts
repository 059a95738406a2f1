/**
 * A child process of the MySQL and SQLite exactness tests (`mysql <table>` or `sqlite <table> <file>`): on each
 * `go <algorithm> <key>` line it sends 250 concurrent checks on one key to the store (the database's clock) and
 * prints how many were admitted.
 */
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import type { AlgorithmName } from '../../src/core/policy.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createMySqlStore } from '../../src/stores/sql/mysql.js';
import { createSqliteStore } from '../../src/stores/sql/sqlite.js';

const [kind, table, file] = process.argv.slice(2) as [string, string, string | undefined];
const options = { table, timeoutMs: 30_000, localCache: false } as const;
let end: () => Promise<void> | void;
let store: ReturnType<typeof createMySqlStore>;
if (kind === 'mysql') {
  const at = { host: '127.0.0.1', port: 3306, user: 'root', database: 'test' };
  const pool = mysql.createPool({ ...at, connectionLimit: 8, multipleStatements: true });
  store = createMySqlStore({ client: pool, ...options });
  end = () => pool.end();
} else if (kind === 'sqlite') {
  const db = new Database(file as string);
  store = createSqliteStore({ db, ...options, lockTimeoutMs: 10_000 });
  end = () => {
    db.close();
  };
} else throw new Error(`unknown store ${kind}`);
await store.ready();

const lines = createInterface({ input: process.stdin });
process.stdout.write('ready\n');
for await (const line of lines) {
  const [command, algorithm, key] = line.split(' ') as [string, AlgorithmName, string];
  if (command === 'exit') break;
  const policy = resolvePolicy({ algorithm, limit: 100, period: '1d' });
  const decisions = await Promise.all(Array.from({ length: 250 }, () => store.check(key, policy, 1, Date.now(), true)));
  process.stdout.write(`${decisions.filter((d) => d.allowed).length}\n`);
}
await store.close();
await end();
// stdin stays open while the parent lives: leave without waiting for it.
process.exit(0);
