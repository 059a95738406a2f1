/**
 * sluice/postgres across processes: 8 processes × 250 concurrent checks on one key admit exactly the limit (100) for
 * every algorithm, on the database's clock, on pg and on postgres.js.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ALGORITHMS } from '../../src/core/policy.js';
import { type LineChild, spawnLineChild, stopLineChildren } from './child-processes.js';

const WORKER = fileURLToPath(new URL('./sql-worker.ts', import.meta.url));
const table = `sluice_exact_${process.pid}`;

for (const kind of ['postgres', 'postgres-js'])
  describe(`${kind}: 8 processes × 250 checks on one key`, { timeout: 240_000 }, () => {
    const admin = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 1 });
    let children: LineChild[] = [];
    before(async () => {
      children = Array.from({ length: 8 }, () => spawnLineChild(WORKER, [kind, table, '5432']));
      for (const child of children) assert.equal(await child.next(), 'ready');
    });
    after(async () => {
      await stopLineChildren(children);
      await admin.query(`DROP TABLE IF EXISTS ${table}`);
      await admin.end();
    });

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
