/**
 * `sluice serve --store mysql://…` on the MariaDB this machine runs: decisions over HTTP `/v1/check` and Envoy gRPC
 * are exact, `/healthcheck` names the store; with a database that is down from the start (nothing listening on its
 * port), the health says so and the failure policy answers — open as allowed and degraded, closed as refused.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { type SluiceProcess, startSluice, unique } from './helpers.js';
import {
  countOf,
  ENVOY_RULES,
  grpcBurst,
  health,
  healthUntil,
  httpBurst,
  storeAnswered,
} from './sql-service-checks.js';

const URL = 'mysql://root@127.0.0.1:3306/test';

/** A loopback port nothing listens on (taken and let go). */
const closedPort = () =>
  new Promise<number>((done) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });

describe('sluice serve --store mysql://', { timeout: 90_000 }, () => {
  let service: SluiceProcess;
  before(async () => {
    service = await startSluice(['--store', URL, '--config', ENVOY_RULES]);
  });
  after(async () => {
    await service?.stop();
  });

  it('/v1/check admits exactly the limit of 30 concurrent checks, counted in the database', async () => {
    const results = await storeAnswered(
      () => httpBurst(service, unique('mysql-http'), 30),
      (r) => r !== undefined && r.degraded !== true,
    );
    assert.equal(results.filter((r) => r?.allowed).length, 10);
    assert.ok(results.every((r) => r !== undefined && r.degraded !== true));
    const db = await mysql.createConnection(URL);
    const [rows] = (await db.query("SELECT count(*) AS n FROM sluice_state WHERE state <> ''")) as unknown as [
      { n: number }[],
    ];
    await db.end();
    assert.ok(Number(rows[0]?.n) >= 1);
  });

  it('Envoy gRPC admits exactly 20 of 30 concurrent calls on a 20-a-day descriptor', async () => {
    const codes = await storeAnswered(
      () => grpcBurst(service, unique('mysql-grpc'), 30),
      (c) => !c.startsWith('error'),
    );
    assert.deepEqual([countOf(codes, 'OK'), countOf(codes, 'OVER_LIMIT')], [20, 10]);
  });

  it('/healthcheck names the store and finds it reachable', async () => {
    const report = await health(service);
    assert.deepEqual(report, { code: 200, status: 'ok', store: 'mysql', storeReachable: true });
  });

  describe('with the database down', () => {
    let open: SluiceProcess;
    let closed: SluiceProcess;
    before(async () => {
      const down = `mysql://root@127.0.0.1:${await closedPort()}/test`;
      [open, closed] = await Promise.all([
        startSluice(['--store', down, '--config', ENVOY_RULES, '--fail', 'open']),
        startSluice(['--store', down, '--config', ENVOY_RULES, '--fail', 'closed']),
      ]);
    });
    after(async () => {
      await Promise.all([open?.stop(), closed?.stop()]);
    });

    it('fail open: every check is allowed and marked degraded, over HTTP and gRPC; health 503 starting', async () => {
      const results = await httpBurst(open, unique('down'), 15);
      assert.ok(
        results.every((r) => r?.allowed === true && r.degraded === true),
        JSON.stringify(results[0]),
      );
      const codes = await grpcBurst(open, unique('down-grpc'), 25);
      assert.equal(countOf(codes, 'OK'), 25);
      // Never ready since it started: 'starting' (503), so a load balancer sends nothing yet (as with Redis); a
      // database lost after start is 200 'degraded' under fail open (sql-store-mysql-restart.test.ts).
      const report = await healthUntil(open, (r) => !r.storeReachable);
      assert.deepEqual(report, { code: 503, status: 'starting', store: 'mysql', storeReachable: false });
    });

    it('fail closed: checks are refused, gRPC answers OVER_LIMIT or UNAVAILABLE, health 503 starting', async () => {
      const results = await httpBurst(closed, unique('down'), 5);
      assert.ok(
        results.every((r) => r === undefined || r.allowed === false),
        JSON.stringify(results[0]),
      );
      const codes = await grpcBurst(closed, unique('down-grpc'), 5);
      assert.ok(
        codes.every((c) => c === 'OVER_LIMIT' || /UNAVAILABLE/.test(c)),
        codes.join(),
      );
      const report = await healthUntil(closed, (r) => !r.storeReachable);
      assert.deepEqual(report, { code: 503, status: 'starting', store: 'mysql', storeReachable: false });
    });
  });
});
