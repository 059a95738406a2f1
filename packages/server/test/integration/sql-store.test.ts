/**
 * `sluice serve --store postgres://…` on the PostgreSQL this machine runs: decisions are exact on the database,
 * /healthcheck follows it, and a URL of no supported database is refused with a coded error.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { type SluiceProcess, startSluice, unique } from './helpers.js';
import { httpBurst, storeAnswered } from './sql-service-checks.js';

const URL = 'postgres://postgres@127.0.0.1:5432/test';

describe('sluice serve --store postgres://', { timeout: 60_000 }, () => {
  let service: SluiceProcess;
  before(async () => {
    service = await startSluice(['--store', URL]);
  });
  after(async () => {
    await service.stop();
  });

  it('admits exactly the limit of concurrent checks, counted in the database', async () => {
    const results = await storeAnswered(
      () => httpBurst(service, unique('sql'), 30),
      (r) => r !== undefined && r.degraded !== true,
    );
    assert.equal(results.filter((r) => r?.allowed).length, 10);
    assert.ok(results.every((r) => r !== undefined && r.degraded !== true));
    const db = new pg.Client({ connectionString: URL });
    await db.connect();
    const { rows } = await db.query('SELECT count(*)::int AS n FROM sluice_state WHERE expires_at > 0');
    await db.end();
    assert.ok(rows[0].n >= 1);
    const health = await fetch(`http://127.0.0.1:${service.http}/healthcheck`);
    assert.equal(health.status, 200);
    await health.arrayBuffer();
  });

  it('a URL of no supported database is ERR_SLUICE_STORE_UNSUPPORTED', async () => {
    const bad = await startSluice(['--store', 'oracle://x@y/z']).then(
      (s) => s,
      (error: unknown) => error,
    );
    if (bad instanceof Error) assert.match(bad.message, /ERR_SLUICE_STORE_UNSUPPORTED|not a store URL/);
    else {
      const exit = await (bad as SluiceProcess).exited;
      assert.notEqual(exit.code, 0);
      assert.match((bad as SluiceProcess).stderr(), /not a store URL/);
    }
  });
});
