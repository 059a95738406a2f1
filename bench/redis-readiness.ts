/**
 * The Redis store before and after issue 13 (readiness, deadlines checked after the poll phase,
 * multi-limit batching, per-item failures): decisions per second and p50/p99 latency of the same
 * workloads, on the same ioredis client and the same redis-server, in the same run. The "before" store
 * is the library as of BASE (extracted with `git archive` and compiled with tsc here, as `npm run bench`
 * compiles the current one); rounds alternate before/after and the median round is reported.
 *
 *   npm run bench -- readiness
 *   BENCH_BASE=<commit> BENCH_REDIS_MS=3000 BENCH_REDIS_ROUNDS=5 npm run bench -- readiness
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { createLimiter } from '../packages/sluice/src/limiter/create-limiter.js';
import { createRedisStore } from '../packages/sluice/src/stores/redis/index.js';
import type { Store } from '../packages/sluice/src/stores/store.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { fmt, table } from './lib/measure.js';

/** main just before issue 13's Redis store changes landed. */
const BASE = process.env.BENCH_BASE ?? 'ee4067e7f37b75399dd0d6c209971cbe98aea3e4';
const RUN_MS = Number(process.env.BENCH_REDIS_MS ?? 1500);
const ROUNDS = Number(process.env.BENCH_REDIS_ROUNDS ?? 3);
const WARMUP_MS = 300;
const KEYS = 10_000;

// ---- the "before" library: extracted at BASE and compiled beside the benchmark's own output

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const repo = root.endsWith('.bench-out') ? resolve(root, '..') : root;
const baseDir = join(repo, '.bench-out', 'base');
rmSync(baseDir, { recursive: true, force: true });
mkdirSync(baseDir, { recursive: true });
execFileSync('sh', ['-c', `git -C "${repo}" archive ${BASE} packages/sluice/src | tar -x -C "${baseDir}"`]);
const src = join(baseDir, 'packages/sluice/src');
execFileSync(process.execPath, [
  join(repo, 'node_modules/typescript/bin/tsc'),
  ...['--outDir', join(baseDir, 'out'), '--rootDir', src, '--module', 'NodeNext', '--moduleResolution', 'NodeNext'],
  ...['--target', 'ES2022', '--skipLibCheck', '--types', 'node', '--typeRoots', join(repo, 'node_modules/@types')],
  join(src, 'stores/redis/index.ts'),
  join(src, 'limiter/create-limiter.ts'),
]);
writeFileSync(join(baseDir, 'out', 'package.json'), '{"type":"module"}');
type CreateStore = (options: { client: Redis; prefix: string }) => Store;
type CreateLimiter = typeof createLimiter;
const before = {
  createRedisStore: (
    (await import(pathToFileURL(join(baseDir, 'out/stores/redis/index.js')).href)) as { createRedisStore: CreateStore }
  ).createRedisStore,
  createLimiter: (
    (await import(pathToFileURL(join(baseDir, 'out/limiter/create-limiter.js')).href)) as {
      createLimiter: CreateLimiter;
    }
  ).createLimiter,
};

// ---- the measurements

interface Result {
  perSecond: number;
  p50: number;
  p99: number;
  timeouts: number;
}

const server = await startRedis();
const client = new Redis(server.port, '127.0.0.1');
await client.ping();

/** `callers` loops, each awaiting `op` one call after another, for RUN_MS after a warm-up. */
async function measure(callers: number, op: (i: number) => Promise<{ degraded?: boolean }>): Promise<Result> {
  let measuring = false;
  let stop = false;
  let degraded = 0;
  const latencies: number[] = [];
  const loop = async (w: number) => {
    for (let i = w; !stop; i += callers) {
      const start = performance.now();
      const d = await op(i % KEYS);
      if (measuring) {
        latencies.push(performance.now() - start);
        if (d.degraded) degraded++;
      }
    }
  };
  const loops = Array.from({ length: callers }, (_, w) => loop(w));
  await new Promise((r) => setTimeout(r, WARMUP_MS));
  const t0 = performance.now();
  measuring = true;
  await new Promise((r) => setTimeout(r, RUN_MS));
  measuring = false;
  const elapsed = performance.now() - t0;
  stop = true;
  await Promise.all(loops);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0;
  return { perSecond: (latencies.length / elapsed) * 1000, p50: at(0.5), p99: at(0.99), timeouts: degraded };
}

const median = (rs: Result[]) => [...rs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(rs.length / 2)] as Result;

const versions = {
  before: { store: before.createRedisStore({ client, prefix: 'before:' }), createLimiter: before.createLimiter },
  after: { store: createRedisStore({ client, prefix: 'after:' }) as Store, createLimiter },
};
const workloads = [
  { name: 'token bucket', make: (v: (typeof versions)['after']) => single(v) },
  { name: '3 limits (fixed window, token bucket, GCRA)', make: (v: (typeof versions)['after']) => three(v) },
];
function single(v: (typeof versions)['after']) {
  const limiter = v.createLimiter({ algorithm: 'token-bucket', limit: 1_000_000, period: '1d', store: v.store });
  return (i: number) => limiter.check(`user:${i}`);
}
function three(v: (typeof versions)['after']) {
  const limiter = v.createLimiter({
    store: v.store,
    limits: [
      { name: 'ip', limit: 1_000_000, period: '1d' },
      { name: 'key', limit: 1_000_000, period: '1d', algorithm: 'token-bucket' },
      { name: 'route', limit: 1_000_000, period: '1d', algorithm: 'gcra' },
    ],
  });
  return (i: number) => limiter.check(`user:${i}`);
}

const rows: (string | number)[][] = [];
for (const workload of workloads) {
  for (const callers of [1, 64, 512]) {
    const results: Record<'before' | 'after', Result[]> = { before: [], after: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of ['before', 'after'] as const) {
        results[name].push(await measure(callers, workload.make(versions[name])));
      }
    }
    const b = median(results.before);
    const a = median(results.after);
    rows.push([
      workload.name,
      callers,
      `${fmt(b.perSecond)} / ${fmt(a.perSecond)}`,
      `${(a.perSecond / b.perSecond).toFixed(2)}×`,
      `${fmt(b.p50, 2)} / ${fmt(a.p50, 2)}`,
      `${fmt(b.p99, 2)} / ${fmt(a.p99, 2)}`,
      `${b.timeouts} / ${a.timeouts}`,
    ]);
  }
}

console.log(`Redis store before (${BASE.slice(0, 7)}) and after issue 13: same client, same redis-server, same run.`);
console.log(`Median of ${ROUNDS} alternating rounds of ${RUN_MS} ms each.\n`);
console.log(
  table(['workload', 'callers', 'decisions/s before / after', 'ratio', 'p50 ms', 'p99 ms', 'degraded'], rows),
);

await versions.before.store.close();
await versions.after.store.close();
client.disconnect();
await server.stop();
rmSync(baseDir, { recursive: true, force: true });
