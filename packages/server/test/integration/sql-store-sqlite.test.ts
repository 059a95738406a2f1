/**
 * `sluice serve --store sqlite:PATH` on a temporary file: decisions over HTTP `/v1/check` and Envoy gRPC are exact,
 * `/healthcheck` names the store; while another process holds the file's write lock (the store down, for SQLite),
 * the health says so and the failure policy answers, and once it lets go decisions are exact again.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { type SluiceProcess, startSluice, unique } from './helpers.js';
import { countOf, ENVOY_RULES, grpcBurst, health, healthUntil, httpBurst } from './sql-service-checks.js';

describe('sluice serve --store sqlite:', { timeout: 90_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sqlite-serve-'));
  const file = join(dir, 'limits.db');
  let service: SluiceProcess;
  before(async () => {
    service = await startSluice(['--store', `sqlite:${file}`, '--config', ENVOY_RULES, '--fail', 'open']);
  });
  after(async () => {
    await service?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('/v1/check admits exactly the limit of 30 concurrent checks, counted in the file', async () => {
    const results = await httpBurst(service, unique('sqlite-http'), 30);
    assert.equal(results.filter((r) => r?.allowed).length, 10);
    assert.ok(results.every((r) => r !== undefined && r.degraded !== true));
    const db = new Database(file, { readonly: true });
    const rows = db.prepare('SELECT count(*) AS n FROM sluice_state').get() as { n: number };
    db.close();
    assert.ok(rows.n >= 1);
  });

  it('Envoy gRPC admits exactly 20 of 30 concurrent calls on a 20-a-day descriptor', async () => {
    const codes = await grpcBurst(service, unique('sqlite-grpc'), 30);
    assert.deepEqual([countOf(codes, 'OK'), countOf(codes, 'OVER_LIMIT')], [20, 10]);
  });

  it('/healthcheck names the store and finds it writable', async () => {
    assert.deepEqual(await health(service), { code: 200, status: 'ok', store: 'sqlite', storeReachable: true });
  });

  it('another process holding the write lock: degraded answers (fail open) and health; exact again after', async () => {
    const holder = new Database(file);
    holder.exec('BEGIN EXCLUSIVE');
    try {
      // Each decision waits out the store's lock timeout (500 ms), then the failure policy answers.
      const during = await httpBurst(service, unique('locked'), 3);
      assert.ok(
        during.every((r) => r?.allowed === true && r.degraded === true),
        JSON.stringify(during),
      );
      const codes = await grpcBurst(service, unique('locked-grpc'), 2);
      assert.equal(countOf(codes, 'OK'), 2);
      const report = await healthUntil(service, (r) => !r.storeReachable);
      assert.deepEqual(report, { code: 200, status: 'degraded', store: 'sqlite', storeReachable: false });
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    const again = await httpBurst(service, unique('again'), 30);
    assert.equal(again.filter((r) => r?.allowed && r.degraded !== true).length, 10);
    const report = await healthUntil(service, (r) => r.storeReachable);
    assert.deepEqual(report, { code: 200, status: 'ok', store: 'sqlite', storeReachable: true });
  });
});
