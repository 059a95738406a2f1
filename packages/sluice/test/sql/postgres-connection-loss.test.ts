/**
 * sluice/postgres when PostgreSQL drops the connection a decision is using (a restart, a failover,
 * pg_terminate_backend): the process lives on, that decision is the failure policy's, and the next ones are exact
 * again on new connections — for a `pg` Pool and for postgres.js.
 */
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import postgres from 'postgres';
import { resolvePolicy } from '../../src/core/policy.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createPostgresStore } from '../../src/stores/sql/postgres.js';
import type { Store } from '../../src/stores/store.js';

const connection = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
const admin = new pg.Pool({ ...connection, max: 2, application_name: `sluice_admin_${process.pid}` });
const table = `sluice_loss_${process.pid}`;

after(async () => {
  await admin.query(`DROP TABLE IF EXISTS ${table}`);
  await admin.end();
});

/** Ends every connection of `app` (its application_name), as a restart or an administrator would. */
const terminate = (app: string) =>
  admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [app]);

/** Resolves once one of `app`'s connections waits for a lock: its decision is inside a transaction. */
async function waitingOnLock(app: string): Promise<void> {
  for (;;) {
    const { rows } = await admin.query(
      "SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
      [app],
    );
    if (rows.length > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Two decisions of a limit of 5, then a third caught inside its transaction (waiting for a table lock) when every
 * connection of `app` is terminated: it is degraded (fail closed refuses) and counts nothing; the next decisions
 * find new connections and count exactly the 3 left.
 */
async function survivesTermination(store: Store, app: string): Promise<void> {
  const limiter = createLimiter({ limit: 5, period: '1h', store, fail: 'closed' });
  const key = `${app}:k`;
  assert.equal((await limiter.check(key)).remaining, 4);
  assert.equal((await limiter.check(key)).remaining, 3);
  const holder = await admin.connect();
  try {
    await holder.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    const stuck = limiter.check(key);
    await waitingOnLock(app);
    await terminate(app);
    const d = await stuck;
    assert.deepEqual([d.allowed, d.degraded], [false, true]);
  } finally {
    await holder.query('ROLLBACK');
    holder.release();
  }
  assert.deepEqual(await answersAfter(limiter, key), [true, true, true, false], 'exactly the 3 left are admitted');
}

/**
 * The next 4 answers the store gave (not the failure policy). postgres.js 3.4 may fail one more query on a
 * connection it reopens after a FATAL error (it keeps the error for the next query): a degraded answer counts
 * nothing, so at most one is skipped.
 */
async function answersAfter(limiter: ReturnType<typeof createLimiter>, key: string): Promise<boolean[]> {
  const answers: boolean[] = [];
  let degraded = 0;
  while (answers.length < 4) {
    const d = await limiter.check(key);
    if (d.degraded === true) degraded++;
    else answers.push(d.allowed);
  }
  assert.ok(degraded <= 1, `${degraded} degraded answers after the connections came back`);
  return answers;
}

describe('postgres store: a connection the database drops', () => {
  it('pg Pool: a terminated connection mid-decision is a store failure, not a crash, and the store recovers', async () => {
    const app = `sluice_loss_pg_${process.pid}`;
    const pool = new pg.Pool({ ...connection, max: 2, application_name: app });
    // Connections dropped while idle in the pool are the pool's to report; the user listens as pg documents.
    pool.on('error', () => {});
    try {
      const store = createPostgresStore({ client: pool, table, timeoutMs: 60_000 });
      await store.ready();
      await survivesTermination(store, app);
    } finally {
      await pool.end();
    }
  });

  it('postgres.js: a terminated reserved connection is a store failure, not a crash, and the store recovers', async () => {
    const app = `sluice_loss_pgjs_${process.pid}`;
    const sql = postgres({ ...connection, max: 2, onnotice: () => {}, connection: { application_name: app } });
    try {
      const store = createPostgresStore({ client: sql, table, timeoutMs: 60_000 });
      await store.ready();
      await survivesTermination(store, app);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('pg Pool: a connection terminated while a decision holds it is dropped, not reused', async () => {
    const app = `sluice_loss_between_${process.pid}`;
    const pool = new pg.Pool({ ...connection, max: 1, application_name: app });
    pool.on('error', () => {});
    try {
      const store = createPostgresStore({ client: pool, table, timeoutMs: 60_000 });
      await store.ready();
      // The next decision's connection is terminated while the decision holds it, before its first round trip (as
      // between two): pg-pool does not listen to a lent client's 'error', the session must.
      const realConnect = pool.connect.bind(pool);
      let armed = true;
      (pool as unknown as { connect: () => Promise<pg.PoolClient> }).connect = async () => {
        const client = await realConnect();
        if (!armed) return client;
        armed = false;
        const realQuery = client.query.bind(client) as (text: string) => Promise<unknown>;
        (client as unknown as { query: (text: string) => Promise<unknown> }).query = async (text) => {
          const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
          await terminate(app);
          await ended;
          return realQuery(text);
        };
        return client;
      };
      const p = resolvePolicy({ limit: 2, period: '1h' });
      await assert.rejects(async () => store.check(`${app}:k`, p, 1, Date.now(), true));
      assert.equal((await store.check(`${app}:k`, p, 1, Date.now(), true)).remaining, 1);
      assert.equal((await store.check(`${app}:k`, p, 1, Date.now(), true)).remaining, 0);
    } finally {
      await pool.end();
    }
  });
});
