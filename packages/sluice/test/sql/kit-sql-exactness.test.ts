/**
 * sluice/mysql (on the local MariaDB) and sluice/sqlite (one temporary file) across processes: 8 processes × 250
 * concurrent checks on one key admit exactly the limit (100) for every algorithm, on the database's clock.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { ALGORITHMS } from '../../src/core/policy.js';
import { type LineChild, spawnLineChild, stopLineChildren } from './child-processes.js';

const WORKER = fileURLToPath(new URL('./kit-sql-worker.ts', import.meta.url));
const table = `sluice_exact_${process.pid}`;
const dir = mkdtempSync(join(tmpdir(), 'sluice-exact-'));

after(async () => {
  const admin = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root', database: 'test' });
  await admin.query(`DROP TABLE IF EXISTS ${table}`);
  await admin.end();
  rmSync(dir, { recursive: true, force: true });
});

for (const kind of ['mysql', 'sqlite'])
  describe(`${kind}: 8 processes × 250 checks on one key`, { timeout: 240_000 }, () => {
    let children: LineChild[] = [];
    before(async () => {
      // The first child makes the table; the others start once it is there.
      const args = [kind, table, join(dir, 'limits.db')];
      children = [spawnLineChild(WORKER, args)];
      assert.equal(await children[0]?.next(), 'ready');
      children.push(...Array.from({ length: 7 }, () => spawnLineChild(WORKER, args)));
      for (const child of children.slice(1)) assert.equal(await child.next(), 'ready');
    });
    after(() => stopLineChildren(children));

    for (const algorithm of ALGORITHMS) {
      it(`${algorithm}: admits exactly 100 of 2,000`, async () => {
        const key = `exact:${kind}:${algorithm}:${Date.now()}`;
        for (const child of children) child.send(`go ${algorithm} ${key}`);
        const admitted = (await Promise.all(children.map((c) => c.next()))).map(Number);
        assert.equal(
          admitted.reduce((a, b) => a + b, 0),
          100,
          `admitted per process: ${admitted.join(', ')}`,
        );
      });
    }
  });
