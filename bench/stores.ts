/**
 * `npm run bench -- stores`: sluice's SQL stores against rate-limiter-flexible's store for the same database, in the
 * same run on the same server — decisions/s at 1 and 64 concurrent callers (as a ratio), rows and bytes per key, and
 * how many of 8 processes × 250 decisions on one key each admits (limit 100): PostgreSQL (RateLimiterPostgres),
 * MySQL/MariaDB (RateLimiterMySQL) and SQLite on better-sqlite3 (RateLimiterSQLite).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exactness } from './lib/exactness.js';
import { type DatabaseName, openSides, type Sides, TABLES } from './lib/store-sides.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
/** Each rate is measured in this many slices, the two libraries taking turns, so load from elsewhere hits both alike. */
const SLICES = 6;
const KEYS = 10_000;
const POINTS = 1_000_000;

/** Decisions of each side over SECONDS each, `callers` callers awaiting their previous decision, in alternating slices. */
async function rates(callers: number, sides: readonly Side[]): Promise<number[]> {
  const done = sides.map(() => 0);
  for (let slice = 0; slice < SLICES; slice++)
    for (const [i, decide] of sides.entries()) {
      const end = performance.now() + (SECONDS * 1000) / SLICES;
      await Promise.all(
        Array.from({ length: callers }, async () => {
          while (performance.now() < end) {
            await decide(`k${Math.floor(Math.random() * KEYS)}`);
            done[i] = (done[i] ?? 0) + 1;
          }
        }),
      );
    }
  return done.map((n) => n / SECONDS);
}
type Side = (key: string) => Promise<unknown>;

/** Rows and bytes on disk of a library's table. */
async function size(database: DatabaseName, sides: Sides, library: 'sluice' | 'rlf', dir: string) {
  const table = TABLES[library];
  if (database === 'postgres') {
    const [row] = await sides.query(
      `SELECT count(*)::int AS n, pg_total_relation_size('${table}')::bigint AS bytes FROM ${table}`,
    );
    return { rows: Number(row?.n), bytes: Number(row?.bytes) };
  }
  if (database === 'mysql') {
    await sides.query(`ANALYZE TABLE ${table}`);
    const [row] = await sides.query(
      `SELECT (SELECT count(*) FROM ${table}) AS n, data_length + index_length AS bytes FROM information_schema.tables WHERE table_schema = 'test' AND table_name = '${table}'`,
    );
    return { rows: Number(row?.n), bytes: Number(row?.bytes) };
  }
  await sides.query('PRAGMA wal_checkpoint(TRUNCATE)', library);
  const [row] = await sides.query(
    `SELECT count(*) AS n FROM ${library === 'sluice' ? 'sluice_state' : table}`,
    library,
  );
  return { rows: Number(row?.n), bytes: statSync(join(dir, `${library}.db`)).size };
}

const TITLES: Record<DatabaseName, string> = {
  postgres: 'PostgreSQL (pg Pool, 16 connections)',
  mysql: 'MySQL / MariaDB (mysql2 pool, 16 connections, multipleStatements)',
  sqlite: 'SQLite (better-sqlite3, one file each, WAL)',
};

/** One database's tables: decisions/s at 1 and 64 callers, rows and bytes per key, and the 8-process exactness. */
async function compare(database: DatabaseName): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  const sides = await openSides(database, { points: POINTS, poolSize: 16, dir });
  if (database !== 'sqlite') for (const table of Object.values(TABLES)) await sides.query(`DELETE FROM ${table}`);
  console.log(`\n${TITLES[database]}\n`);
  const durable = sides.durable;
  console.log(
    `| callers | sluice decisions/s | rate-limiter-flexible decisions/s | ratio |${durable ? ' sluice durable: true | ratio |' : ''}`,
  );
  console.log(`| --- | --- | --- | --- |${durable ? ' --- | --- |' : ''}`);
  for (const callers of [1, 64]) {
    const measured = [sides.sluice.decide, sides.rlf.decide, ...(durable ? [durable.decide] : [])];
    const [a = 0, b = 0, c] = await rates(callers, measured);
    const more = c === undefined ? '' : ` ${c.toFixed(0)} | ${(c / b).toFixed(2)}× |`;
    console.log(`| ${callers} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${(a / b).toFixed(2)}× |${more}`);
  }
  console.log('');
  for (const library of ['sluice', 'rlf'] as const) {
    const { rows, bytes } = await size(database, sides, library, dir);
    const name = library === 'rlf' ? 'rate-limiter-flexible' : library;
    console.log(`${name}: ${rows} rows for ${rows} keys, ${(bytes / rows).toFixed(0)} bytes per key on disk`);
  }
  const exact = await exactness(database, dir);
  console.log(
    `8 processes × 250 decisions on one key, limit 100: sluice admitted ${exact.sluice.admitted} (${exact.sluice.failed} failed), rate-limiter-flexible admitted ${exact.rlf.admitted} (${exact.rlf.failed} failed)`,
  );
  if (database !== 'sqlite') for (const table of Object.values(TABLES)) await sides.query(`DROP TABLE ${table}`);
  await sides.sluice.close();
  await sides.durable?.close();
  await sides.close();
  rmSync(dir, { recursive: true, force: true });
}

const only = process.env.BENCH_STORES?.split(',');
for (const database of ['postgres', 'mysql', 'sqlite'] as const)
  if (only === undefined || only.includes(database)) await compare(database);
