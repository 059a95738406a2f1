/**
 * `sluice serve --store postgres://…` while its database goes away: a PostgreSQL 15 of the test's own (initdb on a
 * free port, run as the postgres user) is stopped mid-run by its PID — answers keep coming, degraded, as the
 * failure policy says — and started again, after which counts are exact again.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { postJson, type SluiceProcess, startSluice, unique } from './helpers.js';

const BIN = '/usr/lib/postgresql/15/bin';
const user = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
const uid = Number(user.stdout.trim());
const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
const canRun = existsSync(join(BIN, 'postgres')) && user.status === 0 && process.getuid?.() === 0;

const freePort = () =>
  new Promise<number>((done) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });

describe(
  'sluice serve --store postgres:// across a database restart',
  { skip: canRun ? false : 'needs PostgreSQL 15 binaries and root (to run them as postgres)', timeout: 120_000 },
  () => {
    let dir = '';
    let port = 0;
    let db: ChildProcess | undefined;
    let service: SluiceProcess;

    const startDb = async () => {
      db = spawn(
        join(BIN, 'postgres'),
        ['-D', join(dir, 'data'), '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'],
        { uid, gid, stdio: 'ignore' },
      );
      for (let i = 0; i < 200; i++) {
        const ready = spawnSync(join(BIN, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port)]);
        if (ready.status === 0) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('the test PostgreSQL did not start');
    };
    const stopDb = async () => {
      const child = db;
      if (child === undefined || child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(child.pid as number, 'SIGQUIT');
      await exited;
    };

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'sluice-pg-'));
      chownSync(dir, uid, gid);
      const init = spawnSync(join(BIN, 'initdb'), ['-D', join(dir, 'data'), '-U', 'postgres', '-A', 'trust'], {
        uid,
        gid,
        encoding: 'utf8',
      });
      assert.equal(init.status, 0, init.stderr);
      port = await freePort();
      await startDb();
      service = await startSluice(['--store', `postgres://postgres@127.0.0.1:${port}/postgres`, '--fail', 'open']);
    });
    after(async () => {
      await service?.stop();
      await stopDb();
      rmSync(dir, { recursive: true, force: true });
    });

    const burst = async (key: string, n: number) => {
      const url = `http://127.0.0.1:${service.http}/v1/check`;
      const answers = await Promise.all(
        Array.from({ length: n }, () => postJson(url, { checks: [{ key, limit: 10, period: '1h' }] })),
      );
      return answers.map((a) => (a.json as { results: { allowed: boolean; degraded?: boolean }[] }).results[0]);
    };

    it('exact before, degraded answers while stopped, exact again after a restart', async () => {
      const before = await burst(unique('before'), 30);
      assert.equal(before.filter((r) => r?.allowed).length, 10);
      await stopDb();
      const during = await burst(unique('during'), 20);
      assert.equal(during.length, 20);
      assert.ok(
        during.every((r) => r?.allowed === true && r.degraded === true),
        JSON.stringify(during[0]),
      );
      // Failing open, /healthcheck stays 200 and says the store is unreachable.
      const health = await fetch(`http://127.0.0.1:${service.http}/healthcheck`);
      const report = (await health.json()) as { status: string; storeReachable: boolean };
      assert.deepEqual([health.status, report.status, report.storeReachable], [200, 'degraded', false]);
      await startDb();
      let again = await burst(unique('again'), 30);
      // The pool's connections died with the database: the first answers may still be degraded while it reconnects.
      for (let i = 0; i < 20 && again.some((r) => r?.degraded); i++) again = await burst(unique('again'), 30);
      assert.equal(again.filter((r) => r?.allowed).length, 10);
    });
  },
);
