/**
 * `sluice serve --store mysql://…` while its database goes away: a MariaDB of the test's own (mariadb-install-db into
 * a temporary directory, mariadbd on a free loopback port) is killed by its PID in the middle of a burst — every
 * request is still answered, degraded, as the failure policy says — and started again, after which counts are exact.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { type SluiceProcess, startSluice, unique } from './helpers.js';
import { healthUntil, httpBurst, storeAnswered } from './sql-service-checks.js';

const MARIADBD = '/usr/sbin/mariadbd';
const INSTALL = '/usr/bin/mariadb-install-db';
const canRun = existsSync(MARIADBD) && existsSync(INSTALL);

const freePort = () =>
  new Promise<number>((done) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });

describe(
  'sluice serve --store mysql:// across a database restart',
  { skip: canRun ? false : 'needs mariadbd and mariadb-install-db', timeout: 180_000 },
  () => {
    let dir = '';
    let port = 0;
    let db: ChildProcess | undefined;
    let service: SluiceProcess;
    const at = () => ({ host: '127.0.0.1', port, user: 'root' });

    const startDb = async () => {
      const asRoot = process.getuid?.() === 0 ? ['--user=root'] : [];
      db = spawn(
        MARIADBD,
        [
          '--no-defaults',
          `--datadir=${join(dir, 'data')}`,
          `--port=${port}`,
          '--bind-address=127.0.0.1',
          `--socket=${join(dir, 'mysqld.sock')}`,
          `--pid-file=${join(dir, 'mysqld.pid')}`,
          '--innodb-buffer-pool-size=16M',
          '--skip-log-bin',
          ...asRoot,
        ],
        { stdio: 'ignore' },
      );
      for (let i = 0; i < 300; i++) {
        const up = await mysql.createConnection(at()).then(
          (c) => c.end().then(() => true),
          () => false,
        );
        if (up) return;
        if (db.exitCode !== null) throw new Error(`the test MariaDB exited with ${db.exitCode}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('the test MariaDB did not start');
    };
    /** Kills the test's own MariaDB by its PID (a crash: InnoDB recovers on the next start). */
    const killDb = async () => {
      const child = db;
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(child.pid as number, 'SIGKILL');
      await exited;
    };

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'sluice-mariadb-'));
      const install = spawnSync(
        INSTALL,
        [
          '--no-defaults',
          `--datadir=${join(dir, 'data')}`,
          '--auth-root-authentication-method=normal',
          '--skip-test-db',
          ...(process.getuid?.() === 0 ? ['--user=root'] : []),
        ],
        { encoding: 'utf8' },
      );
      assert.equal(install.status, 0, install.stderr);
      port = await freePort();
      await startDb();
      const admin = await mysql.createConnection(at());
      await admin.query('CREATE DATABASE sluice');
      await admin.end();
      service = await startSluice(['--store', `mysql://root@127.0.0.1:${port}/sluice`, '--fail', 'open']);
    });
    after(async () => {
      await service?.stop();
      await killDb();
      rmSync(dir, { recursive: true, force: true });
    });

    it('exact before; killed mid-burst, every request answered (degraded); exact again after a restart', async () => {
      const before = await storeAnswered(
        () => httpBurst(service, unique('before'), 30),
        (r) => r?.degraded !== true,
      );
      assert.equal(before.filter((r) => r?.allowed).length, 10);
      assert.ok(before.every((r) => r?.degraded !== true));

      // Killed while a burst is in flight: nothing hangs or errors, and no more than the limit is admitted counted.
      const key = unique('mid');
      const [mid] = await Promise.all([httpBurst(service, key, 60), killDb()]);
      assert.ok(
        mid.every((r) => r !== undefined && (r.allowed || r.degraded !== true)),
        JSON.stringify(mid),
      );
      assert.ok(mid.filter((r) => r?.allowed && r.degraded !== true).length <= 10);

      const during = await httpBurst(service, unique('during'), 20);
      assert.ok(
        during.every((r) => r?.allowed === true && r.degraded === true),
        JSON.stringify(during[0]),
      );
      const down = await healthUntil(service, (r) => !r.storeReachable);
      assert.deepEqual(down, { code: 200, status: 'degraded', store: 'mysql', storeReachable: false });

      await startDb();
      let again = await httpBurst(service, unique('again'), 30);
      // The pool's connections died with the database: the first answers may still be degraded while it reconnects.
      for (let i = 0; i < 20 && again.some((r) => r?.degraded); i++)
        again = await httpBurst(service, unique('again'), 30);
      assert.equal(again.filter((r) => r?.allowed).length, 10);
      const up = await healthUntil(service, (r) => r.storeReachable);
      assert.deepEqual(up, { code: 200, status: 'ok', store: 'mysql', storeReachable: true });
      assert.equal(service.child.exitCode, null, service.stderr());
    });
  },
);
