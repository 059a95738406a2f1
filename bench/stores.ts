/**
 * `npm run bench -- stores`: sluice's SQL stores against rate-limiter-flexible's store for the same database, in the
 * same run on the same server — decisions/s at 1 and 64 concurrent callers (as a ratio), and rows and bytes per key.
 * PostgreSQL only so far (MySQL and SQLite stores are not written yet).
 */
import pg from 'pg';
import { RateLimiterPostgres } from 'rate-limiter-flexible';
import { resolvePolicy } from 'sluice';
import { createPostgresStore } from 'sluice/postgres';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const KEYS = 10_000;

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

const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 16 });
await pool.query('DROP TABLE IF EXISTS bench_sluice; DROP TABLE IF EXISTS bench_rlf');
const store = createPostgresStore({ client: pool, table: 'bench_sluice', localCache: false, timeoutMs: 10_000 });
await store.ready();
const policy = resolvePolicy({ algorithm: 'fixed-window', limit: 1_000_000, period: '1h' });
const rlf = await new Promise<RateLimiterPostgres>((resolve, reject) => {
  const limiter: RateLimiterPostgres = new RateLimiterPostgres(
    {
      storeClient: pool,
      storeType: 'pool',
      tableName: 'bench_rlf',
      points: 1_000_000,
      duration: 3600,
      clearExpiredByTimeout: false,
    },
    (error?: Error) => (error ? reject(error) : resolve(limiter)),
  );
});

console.log('| callers | sluice decisions/s | rate-limiter-flexible decisions/s | ratio |');
console.log('| --- | --- | --- | --- |');
for (const callers of [1, 64]) {
  const ours = await rate(callers, async (key) => store.check(key, policy, 1, Date.now(), true));
  const theirs = await rate(callers, (key) => rlf.consume(key, 1));
  console.log(`| ${callers} | ${ours.toFixed(0)} | ${theirs.toFixed(0)} | ${(ours / theirs).toFixed(2)}× |`);
}
for (const table of ['bench_sluice', 'bench_rlf']) {
  const { rows } = await pool.query(
    `SELECT count(*)::int AS n, pg_total_relation_size('${table}')::bigint AS bytes FROM ${table}`,
  );
  const { n, bytes } = rows[0] as { n: number; bytes: string };
  console.log(
    `${table}: ${n} rows (1 per key), ${(Number(bytes) / n).toFixed(0)} bytes per key on disk (table + indexes)`,
  );
}
await pool.query('DROP TABLE IF EXISTS bench_sluice; DROP TABLE IF EXISTS bench_rlf');
await store.close();
await pool.end();
