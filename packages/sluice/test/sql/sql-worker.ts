/**
 * A child process of the SQL stores' exactness test (`postgres` on pg, `postgres-js` on postgres.js): on each `go <algorithm> <key>` line it sends 250 concurrent
 * checks on one key to the store (the database's clock) and prints how many were admitted.
 */
import { createInterface } from 'node:readline';
import pg from 'pg';
import postgres from 'postgres';
import type { AlgorithmName } from '../../src/core/policy.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createPostgresStore } from '../../src/stores/sql/postgres.js';

const [kind, table, port] = process.argv.slice(2) as [string, string, string];
if (kind !== 'postgres' && kind !== 'postgres-js') throw new Error(`unknown store ${kind}`);
const at = { host: '127.0.0.1', port: Number(port), user: 'postgres', database: 'test', max: 8 };
const client = kind === 'postgres' ? new pg.Pool(at) : postgres({ ...at, onnotice: () => {} });
const store = createPostgresStore({ client, table, timeoutMs: 30_000, localCache: false });

const lines = createInterface({ input: process.stdin });
process.stdout.write('ready\n');
for await (const line of lines) {
  const [command, algorithm, key] = line.split(' ') as [string, AlgorithmName, string];
  if (command === 'exit') break;
  const policy = resolvePolicy({ algorithm, limit: 100, period: '1d' });
  const decisions = await Promise.all(Array.from({ length: 250 }, () => store.check(key, policy, 1, Date.now(), true)));
  process.stdout.write(`${decisions.filter((d) => d.allowed).length}\n`);
}
await store.close();
await (client instanceof pg.Pool ? client.end() : client.end());
// stdin stays open while the parent lives: leave without waiting for it.
process.exit(0);
